# syntax=docker/dockerfile:1
#
# docker build -t runblock .
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

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
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
ENTRYPOINT ["runblock"]
CMD ["serve"]
