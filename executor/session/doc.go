// Package session keeps the state of a session's cells between them: its
// Manager is an executor.Runner that sends a Request without a Session to
// the Runner it wraps, and runs the cells of a session one at a time, in
// order, in one live process from an executor.SessionStarter, rebuilding
// that process's state by replay when it is gone. README.md says how.
package session
