package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// checkOutputFile refuses an output file path that cannot be written
// before any work is done: a directory, or a file in a directory that does
// not exist. Empty and "-" (stdout) pass. The error names the flag and is
// an input error (exit code 2).
func checkOutputFile(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInput(fmt.Errorf("%s: %s is a directory; give a file name, e.g. %s", flag, path, filepath.Join(path, "out"+filepath.Ext(path))))
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return badInput(fmt.Errorf("%s: cannot write %s: %w; create the directory first", flag, path, err))
	}
	if !st.IsDir() {
		return badInput(fmt.Errorf("%s: cannot write %s: %s is not a directory", flag, path, dir))
	}
	return nil
}

// createWriteOnly creates or truncates path for writing only. Unlike
// os.Create (read-write), it leaves a pipe such as /dev/stdout with its own
// reader only, so a reader that goes away makes writes fail (EPIPE)
// instead of blocking once the pipe is full.
func createWriteOnly(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}
