package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	type body struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		in, want string // want "": accepted
	}{
		{`{"a":1}`, ""},
		{" {\"a\":1} \n\t", ""},
		{`{"a":1}garbage`, "data after the JSON value at offset 7"},
		{`{}{}`, "data after the JSON value at offset 2"},
		{`{"a":1} 2`, "data after the JSON value"},
		{`{"a":1}]`, "data after the JSON value"},
		{`{"b":1}`, `unknown field "b"`},
		{``, "empty"},
		{`{"a":`, "unexpected EOF"},
	} {
		var v body
		err := DecodeJSON(strings.NewReader(tc.in), &v)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("DecodeJSON(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if err := DecodeJSON(strings.NewReader(`{}{}`), &body{}); !errors.Is(err, ErrTrailingData) {
		t.Errorf("trailing data: %v, want ErrTrailingData", err)
	}
}

// FuzzDecodeJSON: DecodeJSON accepts exactly what json.Unmarshal accepts (one
// JSON value, white space around it), and reads the same value.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":1}garbage`, `{}{}`, `[] `, `"x"`, `1 2`, ``, " ", `{"a":[1,{"b":null}]}x`, `nul`, "{}\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want any
		err := DecodeJSON(bytes.NewReader(data), &got)
		werr := json.Unmarshal(data, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%q: DecodeJSON %v, json.Unmarshal %v", data, err, werr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: DecodeJSON read %v, json.Unmarshal %v", data, got, want)
		}
	})
}
