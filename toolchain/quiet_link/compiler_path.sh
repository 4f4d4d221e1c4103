# Sourced by filter.sh and toolchain/link_record/record.sh, which gcc runs in place of its linker
# driver: find_tool NAME prints the path of the program NAME where gcc looks for the programs it
# runs, the directories of COMPILER_PATH (its own, or a cross compiler's), and fails if none is
# there.
find_tool() {
  local name=$1 dir dirs
  IFS=: read -ra dirs <<<"${COMPILER_PATH:-}"
  for dir in "${dirs[@]}"; do
    if [ -n "$dir" ] && [ -x "$dir/$name" ]; then
      echo "$dir/$name"
      return 0
    fi
  done
  return 1
}
