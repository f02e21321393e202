//go:build !unix

package main

import "os"

// lockFile does nothing here: no advisory lock is taken.
func lockFile(*os.File) error { return nil }
