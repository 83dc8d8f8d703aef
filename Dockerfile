# tend in an image of its own: FROM scratch, nothing but the static binary of
# `make build` (no base image to pull). Build it with `make image`; docs/reference.md "Running
# in a container" says how to put tend into an image you already have instead.
FROM scratch AS tend
ARG VERSION=dev
LABEL org.opencontainers.image.title="tend" \
      org.opencontainers.image.description="an in-container process supervisor" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/tend-sh/tend" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY bin/tend /tend
# A writable directory for the API socket (the spec's own directory is often a
# read-only volume); `tend run` and `tend status` both find it through TEND_LISTEN.
WORKDIR /run/tend
ENV TEND_LISTEN=unix:/run/tend/tend.sock
# No shell in the image: the health command is tend itself (exit 0 ready, 1 not).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/tend", "status", "--ready"]
ENTRYPOINT ["/tend", "run"]
CMD ["/etc/tend/spec.yaml"]

# The image of examples/kubernetes (`make image-example`): tend and /demo, the
# program its spec runs.
FROM tend AS example
COPY bin/demo /demo
