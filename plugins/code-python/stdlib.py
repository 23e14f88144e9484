"""The standard library modules a script may import.

componentize-py puts into the component only the modules the app
imports, and runs those imports when it builds it (so they cost a script
nothing). Importing these here makes them there for scripts. Each import
may fail (a module whose C part the component lacks), leaving it out.
"""

import importlib

MODULES = [
    "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections", "colorsys",
    "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum",
    "fnmatch", "fractions", "functools", "graphlib", "gzip", "hashlib", "heapq", "hmac",
    "html", "html.parser", "io", "ipaddress", "itertools", "json", "math", "operator",
    "pprint", "random", "re", "secrets", "shlex", "sqlite3", "statistics", "string", "struct",
    "textwrap", "time", "tomllib", "typing", "unicodedata", "urllib.parse", "uuid",
    "xml.etree.ElementTree", "zlib",
]

available = []
for _name in MODULES:
    try:
        importlib.import_module(_name)
        available.append(_name)
    except Exception:
        pass
