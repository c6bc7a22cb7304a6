# The shoal command in a small image (the operator's, deploy/operator.yaml):
#   docker build -t REGISTRY/shoal:TAG . && docker push REGISTRY/shoal:TAG
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /shoal ./cmd/shoal

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /shoal /shoal
USER 65532:65532
ENTRYPOINT ["/shoal"]
