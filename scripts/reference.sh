# Sourced by the scripts that run the original Python tools (analyze_trace.py, nvml_trace.py,
# summarize_host_telemetry.py). They are found in one place only: the folder $FLINCH_REFERENCE.
#
#   reference_require TOOL   prints the tool's path, or explains and exits 1 (golden generators)
#   reference_optional TOOL  prints the tool's path, or explains on stderr and prints nothing
#                            (benchmarks and checks that skip the reference column without it)

reference_explain() {
    if [[ -z ${FLINCH_REFERENCE:-} ]]; then
        echo "FLINCH_REFERENCE is not set: set it to the folder holding the reference $1" \
             "(e.g. FLINCH_REFERENCE=/path/to/reference $0)" >&2
    else
        echo "FLINCH_REFERENCE=$FLINCH_REFERENCE holds no $1" >&2
    fi
}

reference_require() {
    if [[ -n ${FLINCH_REFERENCE:-} && -f $FLINCH_REFERENCE/$1 ]]; then
        (cd "$FLINCH_REFERENCE" && printf '%s/%s\n' "$(pwd)" "$1")
    else
        reference_explain "$1"
        exit 1
    fi
}

reference_optional() {
    if [[ -n ${FLINCH_REFERENCE:-} && -f $FLINCH_REFERENCE/$1 ]]; then
        (cd "$FLINCH_REFERENCE" && printf '%s/%s\n' "$(pwd)" "$1")
    else
        reference_explain "$1"
        echo "(continuing without the reference $1)" >&2
    fi
}
