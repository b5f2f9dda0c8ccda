"""Refresh the ACP agent registry snapshot bundled with acp-session (acp_session/registry/snapshot.json).

    python schema/refresh_registry.py                       # from the official registry.json
    python schema/refresh_registry.py --from FILE_OR_URL    # from another registry.json
    python schema/refresh_registry.py --from-dir CHECKOUT   # from a checkout of the registry repository
                                                            # (its <id>/agent.json files)

The result is checked by decoding it with the package's own types (every agent must decode), stamped with
today's date and its source, and keeps the login kinds the previous snapshot recorded (the registry itself
has none). Review the diff and commit it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from acp_session.registry import DEFAULT_REGISTRY_URL, RegistryError  # noqa: E402
from acp_session.registry.source import fetch_bytes, parse_registry  # noqa: E402

SNAPSHOT = REPO / "acp_session" / "registry" / "snapshot.json"


def from_checkout(folder: Path) -> dict[str, Any]:
    """registry.json's shape from ``<id>/agent.json`` files (folders starting with ``.`` or ``_`` are skipped,
    as the registry's build does)."""
    agents = []
    for path in sorted(folder.glob("*/agent.json")):
        if path.parent.name.startswith((".", "_")):
            continue
        agents.append(json.loads(path.read_text(encoding="utf-8")))
    return {"version": "1.0.0", "agents": agents}


def refresh(source: str | None, checkout: Path | None, output: Path, today: str) -> dict[str, Any]:
    if checkout is not None:
        document = from_checkout(checkout)
        origin = f"agent.json files of a registry checkout ({checkout.name})"
    else:
        url_or_file = source or DEFAULT_REGISTRY_URL
        if url_or_file.startswith(("http://", "https://")):
            data = fetch_bytes(url_or_file, timeout=30)
        else:
            data = Path(url_or_file).read_bytes()
        document = json.loads(data)
        origin = url_or_file
    document.pop("_snapshot", None)
    document["agents"] = sorted(document["agents"], key=lambda agent: agent["id"])
    previous = json.loads(output.read_text(encoding="utf-8")).get("_snapshot", {}) if output.exists() else {}
    document["_snapshot"] = {
        "date": today,
        "source": f"{origin}; refresh with schema/refresh_registry.py",
        "authMethods": previous.get("authMethods", {}),
        "authSource": previous.get("authSource", ""),
    }
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    registry = parse_registry(text.encode(), "the refreshed snapshot")  # every agent must decode
    if not registry.agents:
        raise SystemExit("refresh_registry: the registry has no agents; the snapshot was not changed")
    output.write_text(text, encoding="utf-8")
    return document


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--from", dest="source", metavar="FILE|URL", help=f"default: {DEFAULT_REGISTRY_URL}")
    where.add_argument("--from-dir", type=Path, metavar="CHECKOUT", help="a checkout of the registry repository")
    parser.add_argument("--output", type=Path, default=SNAPSHOT, help="default: the package's snapshot.json")
    parser.add_argument(
        "--date", default=datetime.date.today().isoformat(), help="the snapshot's date (default: today)"
    )
    args = parser.parse_args(argv)
    try:
        document = refresh(args.source, args.from_dir, args.output, args.date)
    except (RegistryError, OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"refresh_registry: {exc}; the snapshot was not changed") from None
    print(f"{args.output}: {len(document['agents'])} agents, dated {args.date}")


if __name__ == "__main__":
    main()
