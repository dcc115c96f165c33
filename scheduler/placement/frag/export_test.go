package frag

// RealTraceDir is realTraceDir for the external tests (package frag_test).
var RealTraceDir = realTraceDir
