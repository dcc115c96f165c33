package chdb

// FileRSS is fileRSS for the package's external tests.
var FileRSS = fileRSS
