//go:build !unix

package experiment

import "os"

// lockFile does nothing here: no advisory lock is taken.
func lockFile(*os.File) error { return nil }
