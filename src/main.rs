fn main() -> std::process::ExitCode {
    automaton::main()
}
