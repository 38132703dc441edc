"""Validates storesync's night documents against docs/run-account.schema.json.

Usage: check_run_account.py SCHEMA DIRECTORY
Every *.json file in DIRECTORY must validate (exit 1 lists the first error of
each that does not); every *.json under DIRECTORY/invalid must NOT validate
(the schema really checks what it claims). Exit 3 when jsonschema is missing.
"""
import json
import pathlib
import sys

try:
    import jsonschema
except ImportError:
    print("jsonschema is not installed (python3 -m pip install jsonschema)")
    sys.exit(3)

schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
root = pathlib.Path(sys.argv[2])
problems = []
valid = sorted(root.glob("*.json"))
for path in valid:
    errors = list(validator.iter_errors(json.loads(path.read_text())))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        problems.append(f"{path.name}: {best.message} at {list(best.absolute_path)}")
invalid = sorted((root / "invalid").glob("*.json"))
for path in invalid:
    if validator.is_valid(json.loads(path.read_text())):
        problems.append(f"invalid/{path.name}: accepted, but it must not be")
print(f"{len(valid)} documents valid, {len(invalid)} refused" if not problems else "\n".join(problems))
sys.exit(1 if problems else 0)
