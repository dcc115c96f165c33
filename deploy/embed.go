// Package deploy holds the documented example files of a gpupool installation
// (configuration, price book, systemd units) and embeds the ones the binary falls
// back on, so that `gpupool demo` and `gpupool analyze` work from any directory.
package deploy

import _ "embed"

// PriceBookExample is price_book.example.csv: a price for each card type of the
// simulated fleet, in USD.
//
//go:embed price_book.example.csv
var PriceBookExample []byte
