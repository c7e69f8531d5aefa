"""``mlops keys init``: make the P-256 key pair that signs registered models.

Locally the pair lives in ``<workspace>/keys/`` (made on the first registration anyway). On a
cluster, make it once and store it as Kubernetes Secrets: the private key only in the
registering pods (``MLOPS_SIGNING_KEY``), the public key in every loader
(``MLOPS_SIGNING_PUBLIC_KEY``). The same pair with openssl::

    openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out signing.key
    openssl ec -in signing.key -pubout -out signing.pub
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mlops.workspace import Workspace


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("keys", help="make the key pair that signs registered models")
    actions = parser.add_subparsers(dest="keys_action", required=True)
    init = actions.add_parser("init", help="write signing.key (0600) and signing.pub; never overwrites")
    init.add_argument("--dir", type=Path, default=None, help="where to write them (default <workspace>/keys)")
    init.set_defaults(handler=init_command)


def init_command(args: argparse.Namespace, workspace: Workspace) -> int:
    from mlops.governance.signing import KEYS_DIR, generate_key_pair, key_id

    directory = args.dir or workspace.root / KEYS_DIR
    private, public = generate_key_pair(directory)
    print(f"private key       {private} (mode 0600; keep it secret: MLOPS_SIGNING_KEY on registering pods)")
    print(f"public key        {public} (MLOPS_SIGNING_PUBLIC_KEY on every server and loader)")
    print(f"key id            {key_id(public)}")
    return 0
