package store

import (
	"fmt"
	"strings"
)

// RefusedError is a statement the read-only SQL path refuses: What names the
// statement, clause, function or table refused, Why the rule. It wraps
// ErrRefused.
type RefusedError struct {
	What string
	Why  string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("read-only SQL (readonly=1): refused %s: %s", e.What, e.Why)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// readStatements are the statements the read-only path runs, by first keyword.
var readStatements = map[string]bool{"select": true, "with": true, "show": true, "describe": true, "desc": true, "explain": true, "exists": true}

// explainKinds may follow EXPLAIN; EXPLAIN's options (header = 1) are refused
// with the other settings.
var explainKinds = map[string]bool{"ast": true, "syntax": true, "plan": true, "pipeline": true, "estimate": true, "query": true, "tree": true}

// deniedFunctions are the functions and table functions, lower case, that read
// or write local files, reach the network, run or inspect processes, or read
// what the engine's configuration holds outside the database, with why. A
// table function not named here is refused by the parsed check unless it is one
// of tableFunctions.
var deniedFunctions = map[string]string{
	"file":                             "it reads a local file (any path the process can read, the data directory's tokens included)",
	"filecluster":                      "it reads local files",
	"filesystem":                       "it lists the local file system",
	"filesystemavailable":              "it inspects the local file system",
	"filesystemcapacity":               "it inspects the local file system",
	"filesystemunreserved":             "it inspects the local file system",
	"input":                            "it reads the client's input stream",
	"url":                              "it reaches the network",
	"urlcluster":                       "it reaches the network",
	"remote":                           "it reaches the network",
	"remotesecure":                     "it reaches the network",
	"cluster":                          "it reaches the network",
	"clusterallreplicas":               "it reaches the network",
	"executable":                       "it runs a process",
	"eval":                             "it runs a process",
	"python":                           "it runs code in the embedding process",
	"jdbc":                             "it reaches the network through a bridge process",
	"odbc":                             "it reaches the network through a bridge process",
	"mysql":                            "it reaches the network",
	"postgresql":                       "it reaches the network",
	"mongodb":                          "it reaches the network",
	"redis":                            "it reaches the network",
	"sqlite":                           "it reads a local file",
	"arrowstream":                      "it reads a local file or socket",
	"arrowflight":                      "it reaches the network",
	"ytsaurus":                         "it reaches the network",
	"gcs":                              "it reaches the network",
	"cosn":                             "it reaches the network",
	"oss":                              "it reaches the network",
	"dictionary":                       "a dictionary's source may read files, URLs or run processes",
	"merge":                            "it reads tables by pattern, past this check",
	"loop":                             "it reads a table named in its arguments, past this check",
	"catboostevaluate":                 "it loads a model file",
	"showcertificate":                  "it reads the server's certificate",
	"addresstoline":                    "it reads the program's debug information (introspection)",
	"addresstolinewithinlines":         "it reads the program's debug information (introspection)",
	"addresstosymbol":                  "it reads the program's symbols (introspection)",
	"demangle":                         "introspection",
	"naivebayesclassifier":             "it loads a model file",
	"naivebayesclassifierwithprob":     "it loads a model file",
	"naivebayesclassifierwithallprobs": "it loads a model file",
}

// deniedPrefixes are families of functions and table functions, lower case,
// refused whole (future members included), with why.
var deniedPrefixes = []struct{ prefix, why string }{
	{"file", "it touches the local file system"},
	{"dict", "a dictionary's source may read files, URLs or run processes"},
	{"s3", "it reaches the network"},
	{"hdfs", "it reaches the network"},
	{"azure", "it reaches the network"},
	{"iceberg", "it reads local files or reaches the network"},
	{"deltalake", "it reads local files or reaches the network"},
	{"hudi", "it reads local files or reaches the network"},
	{"paimon", "it reads local files or reaches the network"},
	{"remote", "it reaches the network"},
	{"executable", "it runs a process"},
	{"mysql", "it reaches the network"},
	{"postgres", "it reaches the network"},
	{"mongo", "it reaches the network"},
	{"sqlite", "it reads a local file"},
	{"jdbc", "it reaches the network through a bridge process"},
	{"odbc", "it reaches the network through a bridge process"},
	{"address", "it reads the program's debug information (introspection)"},
	{"naivebayes", "it loads a model file"},
	{"catboost", "it loads a model file"},
	{"arrow", "it reads a local file or reaches the network"},
}

// tableFunctions are the table functions, lower case, that the read-only path
// allows: each makes rows from its arguments and touches nothing outside the
// query (view reads through a query the same checks hold).
var tableFunctions = map[string]bool{
	"numbers": true, "numbers_mt": true, "zeros": true, "zeros_mt": true, "primes": true,
	"generate_series": true, "generateseries": true, "generaterandom": true, "values": true,
	"null": true, "view": true, "viewifpermitted": true, "format": true,
}

// deniedSystemTables are system tables, lower case, that read local files or
// inspect the process beyond the database.
var deniedSystemTables = map[string]string{
	"certificates":          "it reads the system's certificate files",
	"stack_trace":           "it signals and inspects every thread of the process",
	"symbols":               "it reads the program's symbols",
	"jemalloc_profile_text": "it reads the allocator's profile files",
	"detached_parts":        "it lists the data directory",
	"remote_data_paths":     "it lists files of the data directory",
	"filesystem_cache":      "it lists files of the cache",
	"user_processes":        "it inspects the process",
	"zookeeper":             "it reaches the network",
	"zookeeper_connection":  "it reaches the network",
}

// functionRefusal returns why the function or table function name is refused,
// or "".
func functionRefusal(name string) string {
	l := strings.ToLower(name)
	if why, ok := deniedFunctions[l]; ok {
		return why
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(l, p.prefix) {
			return p.why
		}
	}
	return ""
}

// CheckReadOnly reads sql with a ClickHouse lexer and refuses, with a
// RefusedError naming what and why, anything but one read statement (SELECT,
// WITH … SELECT, SHOW, DESCRIBE, EXISTS, EXPLAIN of a SELECT) that calls no
// function or table function touching the local file system, the network or
// processes, names no such system table, writes no output (INTO OUTFILE, FORMAT)
// and changes no setting (SETTINGS). It is the first of QueryReadOnly's checks;
// CheckReadOnlyParsed asks the engine's own parser next.
func CheckReadOnly(sql string) error {
	toks, err := lexSQL(sql)
	if err != nil {
		return err
	}
	for i, t := range toks {
		if t.isPunct(";") && i != len(toks)-1 {
			return &RefusedError{What: "a second statement after ;", Why: "the read-only path runs one statement"}
		}
	}
	if len(toks) > 0 && toks[len(toks)-1].isPunct(";") {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return &RefusedError{What: "an empty statement", Why: "there is nothing to run"}
	}
	if err := checkStatementKind(toks); err != nil {
		return err
	}
	for i, t := range toks {
		if err := checkToken(toks, i, t); err != nil {
			return err
		}
	}
	return nil
}

// checkStatementKind allows the read statements only.
func checkStatementKind(toks []token) error {
	i := 0
	for i < len(toks) && toks[i].isPunct("(") {
		i++
	}
	if i == len(toks) || toks[i].kind != tokWord {
		return &RefusedError{What: "a statement that does not start with a keyword", Why: "the read-only path runs SELECT, WITH, SHOW, DESCRIBE, EXISTS and EXPLAIN"}
	}
	first := strings.ToLower(toks[i].text)
	if !readStatements[first] || (first != "select" && first != "with" && i > 0) {
		return &RefusedError{What: strings.ToUpper(first), Why: "it is not a read statement; the read-only path runs SELECT, WITH, SHOW, DESCRIBE, EXISTS and EXPLAIN (writes need gpupool sql --write and sql.allow_write)"}
	}
	if first != "explain" {
		return nil
	}
	j := i + 1
	for j < len(toks) && toks[j].kind == tokWord && explainKinds[strings.ToLower(toks[j].text)] {
		j++
	}
	for j < len(toks) && toks[j].isPunct("(") {
		j++
	}
	if j == len(toks) || !(toks[j].is("select") || toks[j].is("with")) {
		return &RefusedError{What: "EXPLAIN of anything but a SELECT", Why: "EXPLAIN may explain a SELECT or WITH … SELECT, without options"}
	}
	return nil
}

// checkToken applies the clause, function and system-table rules to toks[i].
func checkToken(toks []token, i int, t token) error {
	next := func(k int) token {
		if i+k < len(toks) {
			return toks[i+k]
		}
		return token{kind: tokPunct}
	}
	switch {
	case t.is("into") || t.is("outfile"):
		return &RefusedError{What: "INTO OUTFILE", Why: "it writes a local file; write the result with gpupool sql -o FILE"}
	case t.is("format") && !next(1).isPunct("("):
		return &RefusedError{What: "FORMAT", Why: "the output format is gpupool sql's --format (a FORMAT clause may not change it); quote a column named format"}
	case t.is("settings") && !showSettings(toks, i):
		return &RefusedError{What: "SETTINGS", Why: "the read-only path runs with readonly=1 and changes no setting"}
	case t.is("parallel") && next(1).is("with"):
		return &RefusedError{What: "PARALLEL WITH", Why: "it runs several statements; the read-only path runs one"}
	case t.is("apply"):
		// SELECT * APPLY(file) calls file on every column, without parentheses
		// after its name.
		k := 1
		if next(k).isPunct("(") {
			k++
		}
		if f := next(k); f.isName() {
			if why := functionRefusal(f.text); why != "" {
				return &RefusedError{What: fmt.Sprintf("the function %s (in APPLY)", f.text), Why: why}
			}
		}
	case t.isName() && next(1).isPunct("("):
		if why := functionRefusal(t.text); why != "" {
			return &RefusedError{What: fmt.Sprintf("the function %s", t.text), Why: why}
		}
	case t.isName() && strings.EqualFold(t.text, "system") && next(1).isPunct(".") && next(2).isName():
		if why, ok := deniedSystemTables[strings.ToLower(next(2).text)]; ok {
			return &RefusedError{What: "system." + next(2).text, Why: why}
		}
	}
	return nil
}

// showSettings: SETTINGS in SHOW [CHANGED] SETTINGS lists settings, it sets none.
func showSettings(toks []token, i int) bool {
	return i >= 1 && (toks[i-1].is("show") || (toks[i-1].is("changed") && i >= 2 && toks[i-2].is("show")))
}
