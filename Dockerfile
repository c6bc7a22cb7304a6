# The shoal command in a small image: the static binary on scratch, CA
# certificates, a non-root user (65532). With a registry:
#
#   docker build --build-arg VERSION=$(git describe --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t REGISTRY/shoal:TAG .
#
# Without one, scripts/image.sh builds the same image with podman: it
# builds the binary with the same command on this machine and runs this
# file's last stage on it (each "COPY --from=build /X" from its X).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -buildvcs=true -trimpath -ldflags='-s -w' -o /out/shoal ./cmd/shoal

FROM scratch
ARG VERSION=unknown
ARG REVISION=unknown
LABEL org.opencontainers.image.title="shoal" \
      org.opencontainers.image.description="Learning-based resource management of cloud-native services" \
      org.opencontainers.image.source="https://github.com/shoal-project/shoal" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY deploy/image/etc/ /etc/
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/shoal /shoal
USER 65532:65532
ENTRYPOINT ["/shoal"]
