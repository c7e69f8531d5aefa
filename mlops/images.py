"""The container image every component declares as ``base_image``.

Built from ``infra/Dockerfile`` (the platform package and its pinned stack).
Under the local runner the image is not pulled: lightweight components run in
the current environment, which has the same package installed.
"""

PLATFORM_IMAGE = "ghcr.io/mlops-platform/mlops:0.1.0"
