//go:build !unix

package experiment

import "os"

// pollable returns nil: a worker reads its stdin as it is.
func pollable(*os.File) *os.File { return nil }
