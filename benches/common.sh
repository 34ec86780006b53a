# Sourced by the benchmark scripts: `here` (the repository), `bin` (the binary to
# measure, BIN or the release build, built when missing), and hyperfine, installed with
# apt-get when missing.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$here/target/release/git-checkpoint}
if [ ! -x "$bin" ]; then
  (cd "$here" && cargo build --release --quiet)
fi
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine; }
