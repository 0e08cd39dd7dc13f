# syntax=docker/dockerfile:1
#
# docker build -t runblock .                      # with numpy, pandas, matplotlib, scipy, sympy, networkx
# docker build --target slim -t runblock:slim .   # the standard library only
# docker run --rm --env-file .env -p 8080:8080 \
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#   --security-opt systempaths=unconfined runblock
#
# Without the --security-opt flags Docker's default profiles forbid user
# namespaces and runblock starts in the reduced isolation tier (it says which
# layers are off; `docker run --rm runblock doctor` shows them). As the
# non-root user below the snippet shares the service's uid (reduced tier,
# unprivileged-uid off); `--user 0` gives the full tier. See README,
# "Deployment".

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/runblock .

# slim: python3 and the standard library. ca-certificates: with
# --no-install-recommends nothing else brings it, and the bots speak HTTPS.
FROM debian:bookworm-slim AS slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /home/runblock --shell /usr/sbin/nologin runblock
COPY --from=build /out/runblock /usr/local/bin/runblock
USER 10001:10001
WORKDIR /home/runblock
ENV RUNBLOCK_PYTHON=/usr/bin/python3 \
    RUNBLOCK_HTTP_ADDR=:8080 \
    LOG_FORMAT=json
EXPOSE 8080
# doctor starts a canary snippet under the configured isolation: healthy means
# this container can still run code.
HEALTHCHECK --interval=60s --timeout=20s --start-period=10s --retries=3 CMD ["runblock", "doctor"]
# SIGTERM drains (RUNBLOCK_DRAIN_TIMEOUT, 20s): stop with a longer grace
# period than Docker's 10s (docker stop -t 30, compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["runblock"]
CMD ["serve"]

# The default image: slim plus Debian's scientific stack, what snippets in
# chat import (snekbox ships the same). matplotlib's font cache is built by
# runblock at start-up, outside any snippet's time.
FROM slim AS full
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3-numpy python3-pandas python3-matplotlib python3-scipy python3-sympy python3-networkx \
 && rm -rf /var/lib/apt/lists/*
USER 10001:10001
