"""``python -m acp_session.cli``: the ``acp-session`` command line."""

from acp_session.cli.main import main

if __name__ == "__main__":
    main()
