"""placeholder"""


def main(argv: list[str]) -> int:
    return 2
