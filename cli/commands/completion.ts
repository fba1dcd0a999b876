// `session-sandbox completion bash|zsh|fish`: a completion script for the shell, to source from its rc
// file. It completes the subcommands, and session ids (asked of the manager with `sessions -q`, so only
// when it answers) where a command takes a session.
import { UsageError } from "../errors";
import { executeCommand, expectPositionals } from "../frame";
import { SUBCOMMANDS } from "../session-sandbox";

const HELP = `usage: session-sandbox completion bash|zsh|fish

Prints a completion script: subcommands, and session ids where a command takes one.
  bash:  echo 'source <(session-sandbox completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(session-sandbox completion zsh)' >> ~/.zshrc
  fish:  session-sandbox completion fish > ~/.config/fish/completions/session-sandbox.fish`;

/** The commands whose first word after their options is a session (or a VM) id. */
const TAKES_A_SESSION = ["exec", "shell", "logs", "inspect", "stats", "rm", "sandbox", "resources", "network", "isolation", "docker"];

function bashScript(commands: string[]): string {
  return `# session-sandbox completion for bash (session-sandbox completion bash)
_session_sandbox() {
  local cur=\${COMP_WORDS[COMP_CWORD]} i word
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands.join(" ")} --help --version" -- "$cur"))
    return
  fi
  case \${COMP_WORDS[1]} in
    completion) [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")) ;;
    ${TAKES_A_SESSION.join("|")})
      # A session id goes in the first place that is not an option or an option's value.
      for ((i = 2; i < COMP_CWORD; i++)); do
        word=\${COMP_WORDS[i]}
        case $word in
          -e|-w|--env|--cwd|--workdir|--timeout|--term|-n|--cpus|--memory) i=$((i + 1)) ;;
          -*) ;;
          *) return ;;
        esac
      done
      case $cur in -*) return ;; esac
      COMPREPLY=($(compgen -W "$(session-sandbox sessions -q 2>/dev/null)" -- "$cur")) ;;
  esac
}
complete -F _session_sandbox session-sandbox
`;
}

function fishScript(commands: string[]): string {
  return `# session-sandbox completion for fish (session-sandbox completion fish)
complete -c session-sandbox -f
complete -c session-sandbox -n __fish_use_subcommand -a "${commands.join(" ")}"
complete -c session-sandbox -n "__fish_seen_subcommand_from completion" -a "bash zsh fish"
complete -c session-sandbox -n "__fish_seen_subcommand_from ${TAKES_A_SESSION.join(" ")}" -a "(session-sandbox sessions -q 2>/dev/null)"
`;
}

export function run(argv: string[]): Promise<number> {
  return executeCommand({ name: "completion", help: HELP, options: {} }, argv, async ({ positionals }) => {
    const [shell] = expectPositionals(positionals, ["shell"]) as [string];
    const commands = [...SUBCOMMANDS.keys()];
    if (shell === "bash") return void process.stdout.write(bashScript(commands));
    // zsh runs bash completion functions through its bashcompinit layer.
    if (shell === "zsh") return void process.stdout.write(`autoload -U +X bashcompinit && bashcompinit\n${bashScript(commands)}`);
    if (shell === "fish") return void process.stdout.write(fishScript(commands));
    throw new UsageError(`no completion for ${JSON.stringify(shell)}`, "session-sandbox completion bash|zsh|fish");
  });
}
