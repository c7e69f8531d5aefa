"""The container image every component declares as ``base_image``.

Built from ``infra/docker/Dockerfile`` (the platform package and its pinned stack; CPU by
default, ``TORCH_VARIANT=cuda`` for GPU pods). ``infra/testing/build_image.sh`` builds the
same recipe with buildah, and the ``pods`` tests run it on a real node.
Under the local runner the image is not pulled: lightweight components run in
the current environment, which has the same package installed.
"""

PLATFORM_IMAGE = "ghcr.io/mlops-platform/mlops:0.1.0"
