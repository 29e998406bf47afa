# One image for every Cortex service; the command picks the service:
#   python -m cortex_gateway (default) | python -m cortex_indexer | python -m cortex_aggregator | cortex migrate
#
#   docker build -t cortex .                                   # with local embeddings (torch CPU, hybrid search)
#   docker build -t cortex --build-arg LOCAL_EMBEDDINGS=false . # no torch: a far smaller image, lexical-only search
#
# The development machines have no Docker engine, so this image is not built there: the same steps are
# what `make install` does (see the Makefile), minus the editable installs and the dev tools.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ARG LOCAL_EMBEDDINGS=true
ARG TORCH_VERSION=2.13.0
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/cortex
ENV PATH=/opt/cortex/bin:$PATH

# torch first, and its CPU build: otherwise sentence-transformers pulls a multi-GB CUDA build. Its own
# layer, so a code change does not download it again.
RUN if [ "$LOCAL_EMBEDDINGS" = "true" ]; then \
        pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu; \
    fi

WORKDIR /src
COPY libs libs
COPY services services
COPY cli cli
# Every package in the repository in one resolve (the libraries are only found by path), as the Makefile's
# PACKAGES; then the local model, which needs the torch above.
RUN pip install ./libs/* ./services/* ./cli \
    && if [ "$LOCAL_EMBEDDINGS" = "true" ]; then pip install "./libs/embedding[local]"; fi
# The local model's ONNX files (the indexer's fp32, the aggregator's int8) made here, once: at run time every
# new container made them again, ~13 s and ~1.3 GB of memory at start. Read-only at run time.
ENV CORTEX_EMBEDDER_LOCAL_ONNX_CACHE_DIR=/opt/cortex/onnx
RUN if [ "$LOCAL_EMBEDDINGS" = "true" ]; then \
        python -c "from cortex_embedding.local_model import load_local_embedder as load; \
assert load(int8=True) is not None and load() is not None"; \
    fi


FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 cortex \
    && useradd --system --uid 10001 --gid cortex --create-home --home-dir /home/cortex cortex
COPY --from=build /opt/cortex /opt/cortex
# The gateway binds loopback by default (right for `cortex run`); in a container it must listen on all
# interfaces. The embedding model is shipped in a package and never fetched from a hub.
ENV PATH=/opt/cortex/bin:$PATH \
    HOME=/home/cortex \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CORTEX_GATEWAY_HOST=0.0.0.0 \
    CORTEX_EMBEDDER_LOCAL_ONNX_CACHE_DIR=/opt/cortex/onnx \
    HF_HUB_OFFLINE=1
USER 10001:10001
WORKDIR /home/cortex
EXPOSE 8080
CMD ["python", "-m", "cortex_gateway"]
