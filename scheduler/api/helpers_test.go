package api

import (
	"encoding/json"
	"net/http"
)

func decodeBody(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
