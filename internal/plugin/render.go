/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"io"
	"os"

	"golang.org/x/term"
)

// useColor decides --color: auto colours only a terminal.
func useColor(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		f, ok := w.(*os.File)
		return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "", nil
	}
	return false, usageErrorf("unknown --color %q: use auto, always or never", mode)
}
