# Multi-stage: a static binary on a distroless base (no shell, non-root).
# docker build --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse HEAD) .
FROM golang:1.26 AS build
ARG VERSION=dev
ARG COMMIT=
ARG DATE=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}" \
      -o /out/switchboard ./cmd/switchboard && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /switchboard
# The embedded database's folder, owned by the non-root user (uid 65532) so the default works without a volume.
COPY --from=build --chown=65532:65532 /out/data /var/lib/switchboard
WORKDIR /var/lib/switchboard
# The short names, so a DATABASE_URL (or SWITCHBOARD_DATABASE_URL) given at run time wins over these defaults.
ENV SWITCHBOARD_ADDR=:8080 DATABASE_URL=sqlite:/var/lib/switchboard/switchboard.db
EXPOSE 8080
USER nonroot
# The binary is /switchboard: administer with `docker exec <container> /switchboard keys create ...`.
# Healthy once /readyz answers 200 (database reachable, schema current); there is no shell in the image.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["/switchboard", "health"]
ENTRYPOINT ["/switchboard"]
CMD ["serve"]
