package billing

import "errors"

// ErrUnknownFormat is returned for a report format other than html, csv, json or parquet.
var ErrUnknownFormat = errors.New("unknown report format (want html, csv, json or parquet)")

// ErrSlack wraps a failure to post a report to Slack; the report files are written
// regardless.
var ErrSlack = errors.New("posting the report to Slack failed")
