// Package bench holds gpupool's end-to-end measurements, run by `make bench`. Each
// benchmark measures its baseline in the same run and reports ratios, because the
// machine is shared and absolute numbers drift.
package bench
