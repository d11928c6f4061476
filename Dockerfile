# Multi-stage: a static binary on a distroless base (no shell, non-root).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/switchboard ./cmd/switchboard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /switchboard
WORKDIR /var/lib/switchboard
ENV SWITCHBOARD_ADDR=:8080 DATABASE_URL=sqlite:/var/lib/switchboard/switchboard.db
EXPOSE 8080
USER nonroot
ENTRYPOINT ["/switchboard"]
CMD ["serve"]
