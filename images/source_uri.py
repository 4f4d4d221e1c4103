#!/usr/bin/env python3
"""Where a build's source is published: the URI that images and provenance name.

    python3 images/source_uri.py URI      prints the URI if it can name a source, else says why
                                          (exit 1)

A release names its source repository in each image's org.opencontainers.image.source label and in
its SLSA provenance (the source, the build type and the builder). The URI is whoever builds the
release's to give (release.sh --source-uri): this project has no home of its own written into it.
It must be absolute with a scheme (https, http, ssh, git or file: a checkout on the build machine),
without spaces, credentials, a query or a fragment, and not a name reserved for examples
(example.com, .org, .net, or a host under .example, .invalid, .test or .localhost: RFC 2606), so
that no release ships a placeholder.
"""
import sys
import urllib.parse

SCHEMES = ("https", "http", "ssh", "git", "file")
RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
RESERVED_TLDS = ("example", "invalid", "test", "localhost")


def check(uri):
    """The URI without a trailing slash; ValueError saying what is wrong with it."""
    if not uri:
        raise ValueError("no source URI given: name the repository this release's source is "
                         "published in, e.g. https://github.com/ORG/REPO")
    if any(c.isspace() for c in uri):
        raise ValueError(f"the source URI '{uri}' has a space in it")
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme not in SCHEMES:
        raise ValueError(f"the source URI '{uri}' does not start with one of "
                         f"{', '.join(s + '://' for s in SCHEMES)}")
    if parsed.query or parsed.fragment or "@" in parsed.netloc:
        raise ValueError(f"the source URI '{uri}' has a query, a fragment or credentials; give "
                         "the repository's plain address")
    host = (parsed.hostname or "").rstrip(".")
    if parsed.scheme == "file":
        if host or not parsed.path.startswith("/"):
            raise ValueError(f"the source URI '{uri}' is not a file:///absolute/path")
    elif not host:
        raise ValueError(f"the source URI '{uri}' names no host")
    if host in RESERVED_DOMAINS or any(host.endswith("." + d) for d in RESERVED_DOMAINS) or \
            host.rsplit(".", 1)[-1] in RESERVED_TLDS:
        raise ValueError(f"the source URI '{uri}' is an example address ({host} is reserved for "
                         "examples): give the repository this release's source is really in")
    return uri.rstrip("/")


def main(argv):
    if len(argv) != 2:
        print("usage: python3 images/source_uri.py URI", file=sys.stderr)
        return 2
    try:
        print(check(argv[1]))
    except ValueError as e:
        print(f"source_uri: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
