# Canary snippet: run through the sandbox at start-up, it reports what the
# isolation layers really enforce. stdin holds a host path that must stay
# invisible. The service compares the answers with what it expects.
import json
import os
import socket
import sys

fds = []
for fd in range(1024):
    try:
        os.fstat(fd)
        fds.append(fd)
    except OSError:
        pass

out = {"fds": fds, "uid": os.getuid(), "gid": os.getgid(), "pid": os.getpid(), "env": sorted(os.environ)}
host_marker = sys.stdin.read().strip()
out["host_marker_visible"] = os.path.exists(host_marker)
out["shadow_visible"] = os.path.exists("/etc/shadow")
try:
    out["root_entries"] = sorted(os.listdir("/"))
except OSError:
    out["root_entries"] = None  # Landlock without a mount namespace hides the host's root
out["hostname"] = socket.gethostname()

ns = {}
for name in ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup"):
    try:
        ns[name] = os.readlink("/proc/self/ns/" + name)
    except OSError as exc:
        ns[name] = "error: " + exc.strerror
out["ns"] = ns

try:
    with open("/proc/self/net/dev") as f:
        out["net_devices"] = sorted(line.split(":")[0].strip() for line in f.readlines()[2:])
except OSError as exc:
    out["net_devices"] = "error: " + exc.strerror

try:
    with open("/proc/self/status") as f:
        status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    out["no_new_privs"] = status.get("NoNewPrivs")
    out["seccomp_mode"] = status.get("Seccomp")
except OSError as exc:
    out["no_new_privs"] = out["seccomp_mode"] = "error: " + exc.strerror

try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    out["inet_socket"] = "allowed"
except OSError as exc:
    out["inet_socket"] = "errno %d" % exc.errno

for family, key in ((socket.AF_NETLINK, "netlink_socket"), (40, "vsock_socket")):
    try:
        socket.socket(family, socket.SOCK_DGRAM).close()
        out[key] = "allowed"
    except OSError as exc:
        out[key] = "errno %d" % exc.errno

try:
    with open("/dev/zero", "wb"):
        pass
    out["dev_zero_write"] = "allowed"
except OSError as exc:
    out["dev_zero_write"] = "errno %d" % exc.errno

sys.modules.pop("resource", None)
import resource  # noqa: E402  (the guard hides it from snippets)

out["rlimits"] = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))[1]
                  for name in ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE", "NICE", "RTPRIO")
                  if hasattr(resource, "RLIMIT_" + name)}
out["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
print(json.dumps(out))
