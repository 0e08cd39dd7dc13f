// Package stage is what runs inside the sandbox: the service (package
// sandbox) re-executes its own binary as one of these stages, named by
// argv[0] (see package protocol), the way gVisor's runsc/boot runs inside
// what runsc/sandbox starts:
//
//   - the init (protocol.InitMarker): PID 1 of a cold run's fresh
//     namespaces; builds the minimal root, locks its thread down, forks
//     python from it as the sandbox uid, supervises the run (its memory,
//     its end), collects its files and reports;
//   - the locker (protocol.LockerMarker): the tiers without namespaces;
//     locks itself down and becomes python;
//   - the fork server's init (protocol.ForkServerMarker): PID 1 of the
//     fork server's namespaces; builds the root, starts the fork server
//     (forkserver.py) and supervises each run forked from it as the cold
//     init supervises its own.
//
// It applies the policy (package policy) it shares with the service, and
// speaks only the protocol (package protocol). The service reuses one
// piece of it outside the sandbox: CollectFiles, the walk of a work dir
// that never follows a link, on the host work dir of the tiers without a
// mount namespace.
package stage
