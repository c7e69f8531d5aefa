"""How to reach a KFP deployment, and a ``kfp.Client`` that fails fast when it cannot.

The settings are a frozen, validated object built once by the CLI layer (flags and
``KFP_*`` environment variables); nothing below reads the environment.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from cli.kfp_client.kfp_errors import KfpAuthError, translate_errors

AuthMode = Literal["bearer", "token-file", "kube", "none"]


class KfpConnection(BaseModel):
    """Where the KFP API is and which credentials to present to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str | None = Field(
        default=None,
        description="KFP API endpoint, e.g. https://kubeflow.example.com/pipeline or http://localhost:8888. "
        "None: find KFP through the kube config (in-cluster, else ~/.kube/config) and the API server proxy.",
    )
    namespace: str | None = Field(
        default=None,
        description="Kubeflow profile namespace for multi-user deployments; None on single-user ones.",
    )
    token: SecretStr | None = Field(
        default=None, description="Bearer token sent as 'Authorization: Bearer <token>'."
    )
    token_file: Path | None = Field(
        default=None,
        description="File holding a bearer token, re-read on every request, as kubelet-projected "
        "service-account tokens rotate.",
    )
    kube_context: str | None = Field(
        default=None, description="kube config context to use when host is None."
    )
    timeout_s: float = Field(
        default=30.0, gt=0, description="Per-request timeout of the health check, in seconds."
    )

    @field_validator("host")
    @classmethod
    def _http_url(cls, host: str | None) -> str | None:
        if host is None or not host.strip():
            return None
        host = host.strip().rstrip("/")
        if not host.startswith(("http://", "https://")):
            raise ValueError(
                f"KFP host {host!r} must start with http:// or https:// (e.g. http://localhost:8888)"
            )
        return host

    @field_validator("token")
    @classmethod
    def _non_empty_token(cls, token: SecretStr | None) -> SecretStr | None:
        return token if token is not None and token.get_secret_value().strip() else None

    @model_validator(mode="after")
    def _consistent_credentials(self) -> KfpConnection:
        if self.token is not None and self.token_file is not None:
            raise ValueError(
                "give either a token (--token/KFP_TOKEN) or a token file (--token-file), not both"
            )
        if self.token_file is not None and not self.token_file.is_file():
            raise ValueError(
                f"token file {self.token_file} does not exist; pass the path of a file holding the token"
            )
        if (self.token is not None or self.token_file is not None) and self.host is None:
            raise ValueError("a bearer token needs the KFP host: pass --host or set KFP_HOST")
        return self

    @property
    def auth(self) -> AuthMode:
        if self.token is not None:
            return "bearer"
        if self.token_file is not None:
            return "token-file"
        return "kube" if self.host is None else "none"

    @property
    def target(self) -> str:
        """The host as a person would name it in an error message."""
        return self.host or "the KFP found through the kube config"

    def auth_hint(self) -> str:
        """What to check when the server rejects our credentials."""
        return {
            "bearer": "the bearer token from --token/KFP_TOKEN was rejected: check it is current and for this host",
            "token-file": f"the token in {self.token_file} was rejected: check it is current and for this host",
            "kube": "the kube config credentials were rejected: check `kubectl config current-context` or pass "
            "--host with --token",
            "none": "the server needs credentials: pass --token or set KFP_TOKEN (or --token-file)",
        }[self.auth]


class _LoginPage(Exception):
    """The health check got a web page instead of the KFP API's JSON."""


@functools.cache
def _client_class() -> type[Any]:
    """Built on first use so that importing this module does not import kfp's client stack."""
    import kfp

    class FailFastClient(kfp.Client):
        """``kfp.Client`` whose health check is one attempt with a timeout.

        The stock check retries five times, five seconds apart, on any API error, so a
        rejected token costs 25 s before a generic TimeoutError; one attempt lets the
        401 reach :func:`translate_errors` at once.
        """

        def __init__(self, timeout_s: float, **kwargs: Any) -> None:
            self._timeout_s = timeout_s
            self.health_checked = False
            super().__init__(**kwargs)

        def _load_config(self, *args: Any, **kwargs: Any) -> Any:
            """Keep the KFP URL that kfp derived when a credential refresh hook runs.

            With a kube config token user, kubernetes' refresh hook re-applies the whole
            kube config, host included, before every request (and re-installs itself),
            which drops the service-proxy path kfp appended and sends requests to the API
            server's root. The trailing slash kfp leaves on that path would double up.
            """
            config = super()._load_config(*args, **kwargs)
            config.host = config.host.rstrip("/")
            refresh, host = config.refresh_api_key_hook, config.host
            if refresh is not None:

                def refresh_keeping_host(configuration: Any) -> None:
                    refresh(configuration)
                    configuration.host = host
                    configuration.refresh_api_key_hook = refresh_keeping_host

                config.refresh_api_key_hook = refresh_keeping_host
            return config

        def get_kfp_healthz(self, sleep_duration: int = 5) -> Any:
            import json

            import kfp_server_api

            response = self._healthz_api.healthz_service_get_healthz(
                _request_timeout=self._timeout_s, _preload_content=False
            )
            kind = response.headers.get("Content-Type", "")
            if "json" not in kind:
                # Kubeflow's auth proxy (oauth2-proxy / Dex) answers unauthenticated API calls
                # with a redirect to its login page, which urllib3 follows to a 200 HTML page.
                raise _LoginPage(kind or "no content type")
            body = json.loads(response.data or b"{}")
            self.health_checked = True
            return kfp_server_api.V2beta1GetHealthzResponse(
                multi_user=body.get("multi_user"), pipeline_store=body.get("pipeline_store")
            )

    return FailFastClient


def open_client(connection: KfpConnection) -> Any:
    """A ``kfp.Client`` for ``connection`` that has answered a health check with our credentials."""
    from kfp.client.set_volume_credentials import ServiceAccountTokenVolumeCredentials

    kwargs: dict[str, Any] = {"host": connection.host, "kube_context": connection.kube_context}
    if connection.token is not None:
        kwargs["existing_token"] = connection.token.get_secret_value()
    elif connection.token_file is not None:
        kwargs["credentials"] = ServiceAccountTokenVolumeCredentials(path=str(connection.token_file))
    not_found = f"is {connection.target} the KFP API root? (with Kubeflow it ends in /pipeline)"
    with translate_errors(connection.target, connection.auth_hint(), "check its health", not_found):
        try:
            with warnings.catch_warnings():
                # kfp warns on every construction that it needs a v2 backend, which is what we target.
                warnings.simplefilter("ignore", FutureWarning)
                client = _client_class()(connection.timeout_s, **kwargs)
            if not client.health_checked:  # kfp skips it when ~/.config/kfp/context.json names a namespace
                client.get_kfp_healthz()
        except _LoginPage as page:
            raise KfpAuthError(
                f"KFP at {connection.target} answered the health check with a web page ({page}), not the API: "
                f"an authenticating proxy wants a login; {connection.auth_hint()}"
            ) from None
    return client
