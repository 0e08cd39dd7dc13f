# syntax=docker/dockerfile:1
#
# docker build -t runblock .                      # with numpy, pandas, matplotlib, scipy, sympy, networkx
# docker build --target slim -t runblock:slim .   # the standard library only
#
# How to run it (Compose, Kubernetes, plain docker run, and the security
# options the sandbox needs): deploy/README.md. deploy/rootfs_test.go builds
# this image's final stage from Debian's packages by running the RUN lines
# below, then runs doctor and snippets in it as the image's user.

FROM golang:1.26.11-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/runblock .

# slim: python3 and the standard library. Debian 13 (trixie), the current
# stable release: python 3.13, and its scientific stack below needs no
# compiler (bookworm's pulls g++ and Boost through python3-pythran).
# ca-certificates: with --no-install-recommends nothing else brings it, and
# the bots speak HTTPS. The user has a group of the same id, with a name.
# Its home (the WORKDIR) is 0755: the executor runs there as root with
# only the capabilities it needs (no DAC_READ_SEARCH), and must still see
# that there is no .env in it.
FROM debian:trixie-slim AS slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 runblock \
 && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/runblock --shell /usr/sbin/nologin runblock \
 && chmod 0755 /home/runblock
COPY --from=build /out/runblock /usr/local/bin/runblock
USER 10001:10001
WORKDIR /home/runblock
ENV RUNBLOCK_PYTHON=/usr/bin/python3 \
    RUNBLOCK_HTTP_ADDR=:8080 \
    LOG_FORMAT=json
EXPOSE 8080
# The running service's own /readyz (runblock health asks
# RUNBLOCK_HTTP_ADDR): ready once the sandbox works and the chat adapters
# are connected, checked every 2 s while it starts.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --start-interval=2s --retries=3 CMD ["runblock", "health"]
# SIGTERM drains (RUNBLOCK_DRAIN_TIMEOUT, 20s): stop with a longer grace
# period than Docker's 10s (docker stop -t 30, compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["runblock"]
CMD ["serve"]

# The default image: slim plus Debian's scientific stack, what snippets in
# chat import (snekbox ships the same). matplotlib's font cache is built by
# runblock at start-up, outside any snippet's time. The packages' test
# suites (about 170 MiB of tests/ directories, which no library imports)
# are removed in the same layer; with them the image is over 600 MiB. (A
# dpkg path-exclude would not do: the packages' postinst byte-compiles
# every file they list and fails on the missing ones.)
FROM slim AS full
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3-numpy python3-pandas python3-matplotlib python3-scipy python3-sympy python3-networkx \
 && rm -rf /var/lib/apt/lists/* \
 && find /usr/lib/python3/dist-packages -type d -name tests -prune -exec rm -rf {} +
USER 10001:10001
