package executor

import (
	"path"
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
	if !utf8.ValidString(name) {
		return "", Errorf(ErrInvalid, "file name %q is not UTF-8", name)
	}
	name = strings.ReplaceAll(name, `\`, "/")
	var parts []string
	for _, part := range strings.Split(name, "/") {
		part = strings.TrimSpace(part)
		if part == "" || part == "." || part == ".." {
			continue
		}
		if strings.ContainsFunc(part, unicode.IsControl) {
			return "", Errorf(ErrInvalid, "file name %q has control characters", name)
		}
		parts = append(parts, part)
	}
	clean := path.Join(parts...)
	switch {
	case clean == "":
		return "", Errorf(ErrInvalid, "file name %q is empty", name)
	case len(parts) > maxPathDepth:
		return "", Errorf(ErrInvalid, "file name %q is more than %d levels deep", name, maxPathDepth)
	case len(clean) > maxPathBytes:
		return "", Errorf(ErrInvalid, "file name %q is longer than %d bytes", name, maxPathBytes)
	}
	return clean, nil
}
