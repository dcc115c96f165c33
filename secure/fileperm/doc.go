// Package fileperm creates gpupool's data directories and files readable by their
// owner only: directories 0700, files 0600. gpupool's data (samples in the spool
// and the store, the scheduler's journal, the agent's record of commands, reports)
// says who ran what where; like the token files it is nobody else's to read.
//
// In: a path and a logger. Out: the directory or file, with no group or other
// permission bits. A directory (or file) found with such bits, from an older
// release or made by hand, is tightened and the change logged as a warning, so an
// upgrade closes what an earlier start left open.
package fileperm
