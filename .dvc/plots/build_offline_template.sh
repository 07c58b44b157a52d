#!/usr/bin/env bash
# Regenerate .dvc/plots/offline.html: DVC's default plots page (dvc_render PAGE_HTML)
# with vega / vega-lite / vega-embed inlined instead of loaded from cdn.jsdelivr.net.
# Needs: npm (registry access), sha256sum, tar.   Usage: ./build_offline_template.sh [OUT.html]
set -euo pipefail

# Same major versions DVC's template loads (vega@5, vega-lite@5, vega-embed@6);
# newest releases of those majors, with peer deps satisfied (vega-lite 5.23 needs vega ^5.24).
VEGA=5.33.1
VEGA_LITE=5.23.0
VEGA_EMBED=6.29.0
# sha256 of the files served by the CDN (= package.json "jsdelivr" entry of each package)
SHA_VEGA=463f3db6a40b20e9747b4ed38f37ed0add508838f9141b1cf8366784b07b30c8
SHA_VEGA_LITE=58c27358e26f2d319cf62f45bc17a4c8362f08645001df2ec8d341eee4097c7f
SHA_VEGA_EMBED=12d02acfbe3ec59ef9a37dd4822a2e04e2961b5bbb671bbe661d2221715b99da

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/offline.html}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

( cd "$tmp" && npm pack --silent "vega@$VEGA" "vega-lite@$VEGA_LITE" "vega-embed@$VEGA_EMBED" >/dev/null )
tar xzf "$tmp/vega-$VEGA.tgz"             -C "$tmp" --transform 's,^package/build/,,' package/build/vega.min.js
tar xzf "$tmp/vega-lite-$VEGA_LITE.tgz"   -C "$tmp" --transform 's,^package/build/,,' package/build/vega-lite.min.js
tar xzf "$tmp/vega-embed-$VEGA_EMBED.tgz" -C "$tmp" --transform 's,^package/build/,,' package/build/vega-embed.min.js
( cd "$tmp" && sha256sum -c --quiet - ) <<SUMS
$SHA_VEGA  vega.min.js
$SHA_VEGA_LITE  vega-lite.min.js
$SHA_VEGA_EMBED  vega-embed.min.js
SUMS

# dvc_render fills the page with str.replace("{plot_divs}", ...) etc. (not str.format), so the
# JS braces need no escaping; we only check that no placeholder text or "</script" sits in the JS.
if grep -qiE '</script|\{(plot_divs|scripts|refresh_tag)\}' "$tmp"/*.min.js; then
  echo "inlined JS contains </script or a DVC placeholder; cannot inline safely" >&2; exit 1
fi

# {scripts} is deliberately left out: DVC would put the CDN <script src> tags back there.
inline() { printf '    <script type="text/javascript">/* %s */\n' "$1"; cat "$tmp/$2"; printf '\n    </script>\n'; }
{
  printf '<!DOCTYPE html>\n<html>\n<head>\n    <meta charset="utf-8">\n    {refresh_tag}\n    <title>DVC Plot</title>\n'
  inline "vega@$VEGA build/vega.min.js, BSD-3-Clause, (c) University of Washington Interactive Data Lab" vega.min.js
  inline "vega-lite@$VEGA_LITE build/vega-lite.min.js, BSD-3-Clause, (c) University of Washington Interactive Data Lab" vega-lite.min.js
  inline "vega-embed@$VEGA_EMBED build/vega-embed.min.js, BSD-3-Clause, (c) University of Washington Interactive Data Lab" vega-embed.min.js
  printf '    <style>\n        table {\n            border-spacing: 15px;\n        }\n        img {\n            max-width: 100%%;\n            height: auto;\n        }\n    </style>\n</head>\n<body>\n    {plot_divs}\n</body>\n</html>\n'
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(sha256sum "$out" | cut -d' ' -f1))"
