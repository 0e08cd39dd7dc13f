package executor

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Why a file the snippet left did not come back (OmittedFile.Reason). The
// count and size caps are the executor's (RUNBLOCK_MAX_FILES,
// RUNBLOCK_MAX_FILES_BYTES); files are taken in the order they appeared
// until a cap is reached, so a file too large for what is left is omitted
// while a later, smaller one may still come back.
const (
	OmitCount      = "over the file count limit"
	OmitSize       = "over the total size limit"
	OmitSymlink    = "symbolic link, not followed"
	OmitNotRegular = "not a regular file"
	OmitHardLink   = "hard link, not read"
	OmitUnreadable = "could not be read"
	OmitTooDeep    = "more than 16 directories deep"
	// OmitNotNamed is the reason of the one entry that counts the files
	// left out past the ones named one by one: a run's report to the
	// service, and so its answer, stays bounded however many files the
	// snippet left.
	OmitNotNamed = "not named one by one: too many files left out"
)

// maxPathBytes and maxPathDepth bound an input file's path.
const (
	maxPathBytes = 255
	maxPathDepth = 8
)

// CleanPath makes name, a file name as a user gave it (an attachment's
// name, a path), a safe path relative to a run's work dir: slashes only,
// no "." or ".." steps, no leading "/", no control characters, at most 8
// levels and 255 bytes. Backslashes count as separators. It fails with
// ErrInvalid where nothing sensible is left.
func CleanPath(name string) (string, error) {
	clean, reason := cleanPath(name)
	if reason != "" {
		return "", Errorf(ErrInvalid, "file name %q %s", name, reason)
	}
	return clean, nil
}

// cleanPath is CleanPath; reason says why nothing sensible is left.
func cleanPath(name string) (clean, reason string) {
	if !utf8.ValidString(name) {
		return "", "is not UTF-8"
	}
	name = strings.ReplaceAll(name, `\`, "/")
	var parts []string
	for _, part := range strings.Split(name, "/") {
		part = strings.TrimSpace(part)
		if part == "" || part == "." || part == ".." {
			continue
		}
		if strings.ContainsFunc(part, unicode.IsControl) {
			return "", "has control characters"
		}
		parts = append(parts, part)
	}
	clean = path.Join(parts...)
	switch {
	case clean == "":
		return "", "is empty"
	case len(parts) > maxPathDepth:
		return "", fmt.Sprintf("is more than %d levels deep", maxPathDepth)
	case len(clean) > maxPathBytes:
		return "", fmt.Sprintf("is longer than %d bytes", maxPathBytes)
	}
	return clean, ""
}

// PathError is an input file whose path breaks the input-file rules (see
// CheckInputPaths): Index is its place among the request's files, so that
// an API can name the field.
type PathError struct {
	Index  int
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("input file path %q %s", e.Path, e.Reason) }

// CheckInputPaths applies the input-file rules of a run to the paths of its
// files, in one place for the sandbox, every API and `exec --file`: each
// path is already what CleanPath makes of it (relative, slashes only, no
// "." or ".." steps, no control characters, no spaces around a name, at
// most 8 levels and 255 bytes), no path is given twice, and none lies
// inside another (a file "a" and a file "a/b"). The error is an *Error
// with ErrInvalid wrapping a *PathError.
func CheckInputPaths(paths []string) error {
	fail := func(i int, reason string) error {
		pe := &PathError{Index: i, Path: paths[i], Reason: reason}
		return &Error{Code: ErrInvalid, Message: pe.Error(), Err: pe}
	}
	seen := make(map[string]int, len(paths))
	for i, p := range paths {
		clean, reason := cleanPath(p)
		if reason != "" {
			return fail(i, reason)
		}
		switch {
		case strings.HasPrefix(p, "/"):
			return fail(i, fmt.Sprintf("must be relative to the work dir (use %q)", clean))
		case slices.Contains(strings.Split(strings.ReplaceAll(p, `\`, "/"), "/"), ".."):
			return fail(i, fmt.Sprintf("must stay inside the work dir, no .. (use %q)", clean))
		case clean != p:
			return fail(i, fmt.Sprintf("is not clean (use %q)", clean))
		}
		if _, dup := seen[p]; dup {
			return fail(i, "is given twice")
		}
		seen[p] = i
	}
	for i, p := range paths {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if j, ok := seen[dir]; ok {
				return fail(i, fmt.Sprintf("lies inside input file %q", paths[j]))
			}
		}
	}
	return nil
}
