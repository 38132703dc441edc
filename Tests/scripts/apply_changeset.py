#!/usr/bin/env python3
"""Applies a storesync changeset to a replica of its consumer database with apsw
(Python's binding of SQLite with the session extension), as a downstream user
would: python3 apply_changeset.py REPLICA.sqlite FROM-TO.changeset

Any row not as the changeset expects aborts the whole apply (exit 1), leaving
the replica as it was; exit 0 when every change applied."""
import sys

import apsw


def main() -> int:
    replica, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as handle:
        changeset = handle.read()
    connection = apsw.Connection(replica)
    conflicts = []

    def conflict(reason: int, change) -> int:
        conflicts.append((reason, change.name))
        return apsw.SQLITE_CHANGESET_ABORT

    try:
        apsw.Changeset.apply(changeset, connection, conflict=conflict)
    except apsw.AbortError:
        pass
    finally:
        connection.close()
    if conflicts:
        print(f"{len(conflicts)} conflict(s), the first in table {conflicts[0][1]} (reason {conflicts[0][0]}); nothing applied")
        return 1
    print(f"applied {path} to {replica}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
