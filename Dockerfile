# Multi-stage: a static binary on a distroless base (no shell, non-root).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/switchboard ./cmd/switchboard && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /switchboard
# The embedded database's folder, owned by the non-root user (uid 65532) so the default works without a volume.
COPY --from=build --chown=65532:65532 /out/data /var/lib/switchboard
WORKDIR /var/lib/switchboard
ENV SWITCHBOARD_ADDR=:8080 DATABASE_URL=sqlite:/var/lib/switchboard/switchboard.db
EXPOSE 8080
USER nonroot
ENTRYPOINT ["/switchboard"]
CMD ["serve"]
