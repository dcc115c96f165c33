// Package chdb is the embedded ClickHouse backend of store.Store: the chDB engine
// (libchdb.so, ClickHouse 26.x) running inside the process, on a data directory that
// survives restarts.
//
// The library is opened with dlopen (purego, no cgo) on the first Open, never at
// program start, so binaries that include this package run on machines without it;
// Open then fails with ErrLibraryMissing, naming the path and how to get the library.
//
// The engine serves one data path per process, so every Store of a process shares it
// and opening a second path while one is open is an error (ErrPathInUse); users and
// tests isolate themselves by database. Inserts stream blocks in ClickHouse's Native
// format; queries bind {name:Type} parameters server-side and return
// RowBinaryWithNamesAndTypes, read into store.Result by store.ParseRowBinary (a
// result with a column of a type that reader leaves to text is asked for again in
// JSONCompact).
package chdb
