/* main.c - the `cell` executable: Lua with cell's engine built in, and a REPL.
 *
 * Modelled on Lua 5.4's lua.c, whose options, argument table, error reports
 * and interrupt handling users already know. What differs, and why:
 * - cell.core is linked in and put in package.preload, and the Lua files
 *   are found relative to the executable's real location, so `bin/cell`
 *   works from the source tree and `PREFIX/bin/cell` once installed, with
 *   no LUA_PATH set.
 * - The REPL reads piped input line by line with the same logic as a
 *   terminal (lua.c runs piped stdin as one file), so a session can be
 *   replayed or tested through a pipe; `cell -` still runs stdin as a file.
 * - The REPL has `cell` loaded as a global and prints expressions without
 *   `=`. Printing, Tab completion and `?name` help are Lua code
 *   (lua/cell/repl.lua, lua/cell/doc.lua): several results print on one
 *   line separated by tabs, tables print nested with depth and length caps,
 *   and the first result is kept in the global `_`.
 * - `-e code` has `cell` as a global too. At the prompt, `a = f(); a.shape`
 *   runs the statements and prints the last expression; an expression is
 *   returned through select(), not as a tail call, so the typed line stays
 *   in a traceback; tracebacks leave out frames of cell's own Lua files
 *   (repl.traceback; traceback() shows the last one whole, as does
 *   CELL_TRACEBACK=full always); help() says how to use the prompt.
 * - Each line typed is kept in the history file ($CELL_HISTORY, else
 *   ~/.cell_history; CELL_HISTORY="" keeps none), appended as it is
 *   entered and loaded at start.
 * - Ctrl-C at the prompt clears the line (or the chunk being continued);
 *   during a call it also raises the engine's interrupt flag, so a long
 *   kernel (which never reaches a Lua hook) stops too.
 * It compiles against Lua 5.4 and LuaJIT's 5.1 API (`make LUA=luajit`). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#if defined(LUA_JITLIBNAME) /* only LuaJIT's lualib.h names a "jit" library */
#include <luajit.h>
#endif

#include "cell.h"

/* OpenMP's wait policy: a short spin (GOMP_SPINCOUNT=10000), then idle
 * workers sleep, unless the user chose one, as the Lua module cell.ompenv
 * sets it (src/lua/ompenv/ompenv.c says
 * why). OpenMP's runtime reads the environment when it loads, before main,
 * and the C library resets the environment after .preinit_array runs, so
 * the executable sets the variable and runs itself again, once (the
 * variable is then set); if that fails it goes on as it is. */
static void omp_env_default(char **argv) {
  if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
  if (setenv("GOMP_SPINCOUNT", "10000", 0) != 0) return;
  execv("/proc/self/exe", argv);
}

/* Defined by the binding (src/lua/lcore.c), linked into this executable. */
int luaopen_cell_core(lua_State *L);

/* --- compatibility with LuaJIT's 5.1 API ------------------------------------ */
#if LUA_VERSION_NUM < 502
#define LUA_OK 0
#define lua_rawlen(L, i) lua_objlen(L, (i))
#define lua_pushglobaltable(L) lua_pushvalue(L, LUA_GLOBALSINDEX)
#endif

/* The directory name under share/lua and lib/lua for this Lua version. */
#if LUA_VERSION_NUM >= 504
#define LUA_VDIR LUA_VERSION_MAJOR "." LUA_VERSION_MINOR
#elif LUA_VERSION_NUM == 503
#define LUA_VDIR "5.3"
#elif LUA_VERSION_NUM == 502
#define LUA_VDIR "5.2"
#else
#define LUA_VDIR "5.1"
#endif

#if defined(LUAJIT_VERSION)
#define HOST_VERSION LUAJIT_VERSION
#else
#define HOST_VERSION LUA_RELEASE
#endif

#define PROMPT "> "
#define PROMPT2 ">> "

/* The name errors are reported under; NULL in the REPL, as lua.c does, so
 * an interactive error reads as the message alone. */
static const char *progname = "cell";

/* The state the SIGINT handler hooks, and the completer reads. */
static lua_State *globalL = NULL;

/* Whether stdin is a terminal: decides readline and prompts. */
static int interactive = 0;

/* --- messages ---------------------------------------------------------------- */

static void l_message(const char *pname, const char *msg) {
  if (pname) fprintf(stderr, "%s: ", pname);
  fprintf(stderr, "%s\n", msg);
  fflush(stderr);
}

/* Print the error message on the stack top, if status is an error, and pop
 * it. The message handler has already made it a string. */
static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    l_message(progname, msg ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

/* --- interrupts ------------------------------------------------------------------ */

static void setsignal(int sig, void (*handler)(int)) {
  struct sigaction sa;
  sa.sa_handler = handler;
  sa.sa_flags = 0;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* The hook set by laction: runs at the next Lua instruction, outside the
 * signal handler, where raising an error is safe. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "KeyboardInterrupt: interrupted!");
}

/* SIGINT during a call: stop Lua code at its next instruction (lua.c's
 * trick: lua_sethook is the one API call safe in a signal handler) and
 * raise the engine's flag, which kernels poll, so C loops stop too. The
 * default action comes back at once, so a second Ctrl-C kills a process
 * stuck where neither is checked.
 * Unlike lua.c, no call and return hooks: when a kernel raises the
 * interrupt first, the hook is still set while the message handler (a C
 * function) runs, and a call or return hook would raise again there,
 * leaving "error in error handling" instead of the message. Line and count
 * hooks only fire in Lua code, which stops at its next instruction anyway.
 * (LuaJIT runs no hooks in compiled code, so there a pure Lua loop cannot
 * be interrupted; a loop of tensor ops stops through the engine's flag.) */
static void laction(int sig) {
  int flag = LUA_MASKLINE | LUA_MASKCOUNT;
  setsignal(sig, SIG_DFL);
  /* The terminal echoed ^C; the report starts on the next line. */
  if (interactive) (void)!write(STDOUT_FILENO, "\n", 1);
  cell_interrupt(1);
  lua_sethook(globalL, lstop, flag, 1);
}

/* Whether the REPL is running: its errors get repl.traceback's short
 * traceback (no frames of cell's own files), scripts lua.c's full one. */
static int in_repl = 0;

static int push_repl_fn(lua_State *L, const char *name);

/* Turn an error into a string with a traceback (lua.c's msghandler); at the
 * prompt through repl.traceback(msg, 2), which keeps the full one for
 * traceback() and returns the user's frames. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      return 1; /* an error object that describes itself: as it is */
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  if (in_repl) {
    int top = lua_gettop(L);
    if (push_repl_fn(L, "traceback")) {
      lua_pushstring(L, msg);
      lua_pushinteger(L, 2); /* the function that raised, seen from repl.traceback */
      if (lua_pcall(L, 2, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return 1;
    }
    lua_settop(L, top);
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Call the function below its narg arguments, with the message handler
 * and Ctrl-C armed for just this call. */
static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  cell_interrupt(0); /* a Ctrl-C of an earlier call must not stop this one */
  globalL = L;
  struct sigaction before; /* the REPL's handler between calls, else SIG_DFL */
  sigaction(SIGINT, NULL, &before);
  setsignal(SIGINT, laction);
  int status = lua_pcall(L, narg, nres, base);
  sigaction(SIGINT, &before, NULL);
  /* A Ctrl-C that a kernel answered can unwind before the hook runs; the
   * hook would then fire in the next call. */
  if (lua_gethook(L) == lstop) lua_sethook(L, NULL, 0, 0);
  cell_interrupt(0);
  lua_remove(L, base);
  return status;
}

static void print_version(void) {
  printf("cell %s (%s)\n", CELL_VERSION, HOST_VERSION);
  fflush(stdout);
}

static void print_usage(const char *badoption) {
  if (badoption[1] == 'e' || badoption[1] == 'l')
    fprintf(stderr, "cell: '%s' needs argument\n", badoption);
  else
    fprintf(stderr, "cell: unrecognized option '%s'\n", badoption);
  fprintf(stderr,
          "usage: cell [options] [script [args]]\n"
          "Available options are:\n"
          "  -e stat   execute string 'stat'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -l mod    require library 'mod' into global 'mod'\n"
          "  -l g=mod  require library 'mod' into global 'g'\n"
          "  -v        show version information\n"
          "  -E        ignore environment variables\n"
#if LUA_VERSION_NUM >= 504
          "  -W        turn warnings on\n"
#endif
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n");
}

/* --- setting up the state --------------------------------------------------------- */

/* The global `arg`: the script at 0, its arguments from 1, the interpreter
 * and options at negative indices (lua.c's layout). */
static void createargtable(lua_State *L, char **argv, int argc, int script) {
  int narg = argc - (script + 1);
  lua_createtable(L, narg > 0 ? narg : 0, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

/* The directory holding the running executable, from its real path, so a
 * symlink in ~/bin to a source tree still finds that tree's Lua files.
 * Falls back on argv[0]; returns 0 when neither says. */
static int exe_dir(const char *argv0, char *out, size_t size) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n > 0) {
    path[n] = '\0';
  } else if (argv0 && strchr(argv0, '/') && realpath(argv0, path)) {
    /* path filled by realpath */
  } else {
    return 0;
  }
  char *slash = strrchr(path, '/');
  if (!slash) return 0;
  *slash = '\0';
  if (strlen(path) + 1 > size) return 0;
  strcpy(out, path);
  return 1;
}

/* Prepend `value` to package[field] (a search path). */
static void prepend_path(lua_State *L, const char *field, const char *value) {
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) {
    lua_pop(L, 1);
    return;
  }
  lua_getfield(L, -1, field);
  const char *old = lua_tostring(L, -1);
  lua_pushfstring(L, "%s;%s", value, old ? old : "");
  lua_setfield(L, -3, field);
  lua_pop(L, 2);
}

/* Make `require "cell"` work with no environment set up: the engine is
 * built in (package.preload), the Lua layer sits beside the executable -
 * lua/ in the source tree, share/lua/<V>/ once installed. Put in front of
 * LUA_PATH so this executable always loads its own Lua files. */
static void setup_package(lua_State *L, const char *argv0) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_cell_core);
  lua_setfield(L, -2, "cell.core");
  lua_pop(L, 2);

  char dir[PATH_MAX];
  if (!exe_dir(argv0, dir, sizeof dir)) return;
  lua_pushfstring(L,
                  "%s/../lua/?.lua;%s/../lua/?/init.lua;"
                  "%s/../share/lua/" LUA_VDIR "/?.lua;%s/../share/lua/" LUA_VDIR "/?/init.lua",
                  dir, dir, dir, dir);
  prepend_path(L, "path", lua_tostring(L, -1));
  lua_pop(L, 1);
  /* C modules installed beside it (a GPU backend, later) load from here. */
  lua_pushfstring(L, "%s/../lib/lua/" LUA_VDIR "/?.so", dir);
  prepend_path(L, "cpath", lua_tostring(L, -1));
  lua_pop(L, 1);
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

static int dofile(lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* `-l mod` sets global mod = require "mod"; `-l g=mod` sets g. */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *modname = eq ? eq + 1 : spec;
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  int status = docall(L, 1, 1);
  if (status == LUA_OK) {
    if (eq)
      lua_pushlstring(L, spec, (size_t)(eq - spec));
    else
      lua_pushstring(L, spec);
    lua_insert(L, -2);
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  return report(L, status);
}

/* Push arg[1..#arg] for the main chunk's `...`. */
static int pushargs(lua_State *L) {
  lua_getglobal(L, "arg");
  if (!lua_istable(L, -1)) luaL_error(L, "'arg' is not a table");
  int n = (int)lua_rawlen(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  int i;
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL; /* stdin */
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = pushargs(L);
    status = docall(L, n, LUA_MULTRET);
  }
  return report(L, status);
}

/* LUA_INIT_5_4 (or LUA_INIT): a chunk, or @file, run before anything. */
static int handle_luainit(lua_State *L) {
#if LUA_VERSION_NUM >= 502
  const char *name = "=LUA_INIT_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=LUA_INIT";
    init = getenv(name + 1);
  }
#else
  const char *name = "=LUA_INIT";
  const char *init = getenv(name + 1);
#endif
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, name);
}

/* --- options -------------------------------------------------------------------------- */

#define has_error 1 /* bad option */
#define has_i 2     /* -i */
#define has_v 4     /* -v */
#define has_e 8     /* -e */
#define has_E 16    /* -E */

/* Scan the options; *first gets the index of the script (0 if none, or of
 * the bad option on has_error). As lua.c. */
static int collectargs(char **argv, int *first) {
  int args = 0;
  if (argv[0] == NULL) {
    *first = -1;
    return 0;
  }
  for (int i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-') return args; /* the script */
    switch (argv[i][1]) {
    case '-': /* -- */
      if (argv[i][2] != '\0') return has_error;
      *first = i + 1;
      return args;
    case '\0': /* - : the script is stdin */
      return args;
    case 'E':
      if (argv[i][2] != '\0') return has_error;
      args |= has_E;
      break;
    case 'W':
      if (argv[i][2] != '\0') return has_error;
      break;
    case 'i':
      args |= has_i; /* -i implies -v */
      /* fall through */
    case 'v':
      if (argv[i][2] != '\0') return has_error;
      args |= has_v;
      break;
    case 'e':
      args |= has_e;
      /* fall through */
    case 'l': /* both need an argument */
      if (argv[i][2] == '\0') {
        i++;
        if (argv[i] == NULL || argv[i][0] == '-') {
          *first = i - 1;
          return has_error;
        }
      }
      break;
    default:
      return has_error;
    }
  }
  *first = 0;
  return args;
}

/* The global `cell`, as the prompt has it: for -e and the REPL. If it
 * fails to load, say why and carry on. */
static void load_cell(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "cell");
  int status = docall(L, 1, 1);
  if (status == LUA_OK)
    lua_setglobal(L, "cell");
  else
    report(L, status);
}

/* Run -e, -l and -W in their order on the command line. */
static int runargs(lua_State *L, char **argv, int n) {
  for (int i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
    case 'e':
    case 'l': {
      const char *extra = argv[i] + 2;
      if (*extra == '\0') extra = argv[++i];
      int status = option == 'e' ? dostring(L, extra, "=(command line)") : dolibrary(L, extra);
      if (status != LUA_OK) return 0;
      break;
    }
#if LUA_VERSION_NUM >= 504
    case 'W':
      lua_warning(L, "@on", 0);
      break;
#endif
    default:
      break;
    }
  }
  return 1;
}

/* --- the Lua side of the REPL ------------------------------------------------------------ */

/* lua/cell/repl.lua prints results, completes names and answers `?name`;
 * it is kept in the registry under this key. Without it (a broken
 * install) the REPL still runs: results print through tostring, and there
 * is no completion or help. */
#define REPL_KEY "cell.repl"

/* Push the function `name` of the REPL module and return 1, or push
 * nothing and return 0. */
static int push_repl_fn(lua_State *L, const char *name) {
  lua_getfield(L, LUA_REGISTRYINDEX, REPL_KEY);
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
    if (lua_isfunction(L, -1)) return 1;
  }
  lua_pop(L, 1);
  return 0;
}

/* --- completion (terminal only) ------------------------------------------------------------ */

static char **matches = NULL;
static size_t nmatches = 0;

static void free_matches(void) {
  for (size_t i = 0; i < nmatches; i++) free(matches[i]);
  free(matches);
  matches = NULL;
  nmatches = 0;
}

/* readline's generator: on state 0 ask repl.complete(text) for the
 * candidates (a sequence of strings), then hand them out one per call
 * (readline frees each). An error in there just gives no candidates. */
static char *complete_generator(const char *text, int state) {
  static size_t next;
  if (state == 0) {
    free_matches();
    next = 0;
    lua_State *L = globalL;
    int top = lua_gettop(L);
    if (push_repl_fn(L, "complete")) {
      lua_pushstring(L, text);
      if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
        size_t n = (size_t)lua_rawlen(L, -1);
        matches = n ? calloc(n, sizeof *matches) : NULL;
        for (size_t i = 0; matches && i < n; i++) {
          lua_rawgeti(L, -1, (int)i + 1);
          const char *s = lua_tostring(L, -1);
          if (s && (matches[nmatches] = strdup(s)) != NULL) nmatches++;
          lua_pop(L, 1);
        }
      }
    }
    lua_settop(L, top);
  }
  if (next < nmatches) {
    char *s = matches[next];
    matches[next++] = NULL; /* readline owns it now */
    return s;
  }
  return NULL;
}

/* The list readline shows on a second Tab: the candidates without the
 * part they share up to the last '.' or ':', so `net.<Tab><Tab>` lists
 * `weight  bias  ...` rather than `net.weight  net.bias  ...`. */
static void display_matches(char **m, int n, int max_length) {
  (void)max_length;
  size_t skip = 0;
  for (size_t i = 0; m[1][i]; i++)
    if (m[1][i] == '.' || m[1][i] == ':') skip = i + 1;
  char **shown = malloc((size_t)(n + 2) * sizeof *shown);
  if (!shown) return;
  shown[0] = m[0];
  int longest = 0;
  for (int i = 1; i <= n; i++) {
    shown[i] = strlen(m[i]) >= skip ? m[i] + skip : m[i];
    int len = (int)strlen(shown[i]);
    if (len > longest) longest = len;
  }
  shown[n + 1] = NULL;
  rl_display_match_list(shown, n, longest);
  rl_forced_update_display();
  free(shown);
}

static char **complete(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1;      /* no file names: this is Lua code */
  rl_completion_append_character = '\0'; /* a name may go on with . : ( */
  return rl_completion_matches(text, complete_generator);
}

/* --- history (terminal only) ---------------------------------------------------------------- */

#define HISTORY_MAX 1000 /* lines kept in the file */

/* $CELL_HISTORY, else ~/.cell_history; empty when there is none (no HOME,
 * CELL_HISTORY set to "", or a file that cannot be created). */
static char histfile[PATH_MAX];

/* Find and load the history file, creating it if missing (readline's
 * append_history only appends to an existing file). */
static void history_start(void) {
  const char *env = getenv("CELL_HISTORY");
  const char *home = getenv("HOME");
  int n = -1;
  histfile[0] = '\0';
  if (env) {
    if (*env) n = snprintf(histfile, sizeof histfile, "%s", env);
  } else if (home && *home) {
    n = snprintf(histfile, sizeof histfile, "%s/.cell_history", home);
  }
  if (n < 0 || (size_t)n >= sizeof histfile) {
    histfile[0] = '\0';
    return;
  }
  FILE *f = fopen(histfile, "a");
  if (!f) {
    histfile[0] = '\0';
    return;
  }
  fclose(f);
  read_history(histfile);
}

/* Add a line the user entered to the history, and append it to the file
 * at once, so a session that dies keeps what was typed. Empty lines and a
 * repeat of the previous line are not kept. Each physical line is its own
 * entry (as Python's REPL keeps them), so the file stays one line per
 * entry and a multi-line function comes back line by line. */
static void saveline(const char *line) {
  if (!interactive || line[0] == '\0') return;
  HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, line) == 0) return;
  add_history(line);
  if (histfile[0]) append_history(1, histfile);
}

static void history_end(void) {
  if (histfile[0]) history_truncate_file(histfile, HISTORY_MAX);
}

/* --- reading lines ---------------------------------------------------------------------------- */

/* What reading a line gave. */
enum { LINE_EOF = 0, LINE_OK = 1, LINE_INTERRUPTED = 2 };

/* Ctrl-C while waiting for input: the handler only raises this flag, and
 * the read loop below abandons the line. */
static volatile sig_atomic_t prompt_sigint = 0;

static void on_prompt_sigint(int sig) {
  (void)sig;
  prompt_sigint = 1;
}

static char *rl_line = NULL;
static int rl_finished = 0;

static void on_line(char *line) {
  rl_line = line;
  rl_finished = 1;
  rl_callback_handler_remove();
}

/* readline through its callback interface (as Python's REPL does), so a
 * Ctrl-C can abandon the line: readline catches no signals itself
 * (rl_catch_signals = 0), our handler raises a flag, select() returns
 * EINTR, and the line is cleared. *interrupted tells that case from the
 * end of input. */
static char *tty_readline(const char *prompt, int *interrupted) {
  int fd = fileno(rl_instream ? rl_instream : stdin);
  rl_line = NULL;
  rl_finished = 0;
  prompt_sigint = 0;
  *interrupted = 0;
  rl_callback_handler_install(prompt, on_line);
  while (!rl_finished) {
    if (prompt_sigint) {
      prompt_sigint = 0;
      /* As a shell does: ^C after the text, then a fresh line. */
      rl_point = rl_end;
      rl_redisplay();
      fputs("^C", rl_outstream ? rl_outstream : stdout);
      fflush(rl_outstream ? rl_outstream : stdout);
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_cleanup_after_signal();
      rl_callback_handler_remove();
      fputc('\n', stdout);
      fflush(stdout);
      *interrupted = 1;
      return NULL;
    }
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fd, &fds);
    int r = select(fd + 1, &fds, NULL, NULL, NULL);
    if (r < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      return NULL;
    }
    if (r > 0) rl_callback_read_char();
  }
  return rl_line;
}

/* One line of input, without its newline, or NULL at end of input (or on
 * Ctrl-C, with *interrupted set). The result is malloc'd. A terminal gets
 * readline; a pipe gets getline, with no prompt, since nobody sees it. */
static char *read_line(const char *prompt, int *interrupted) {
  *interrupted = 0;
  if (interactive) return tty_readline(prompt, interrupted);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return NULL;
  }
  if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
  if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
  return line;
}

/* The prompt: the global _PROMPT / _PROMPT2 if set (as lua.c), else ours. */
static const char *get_prompt(lua_State *L, int firstline) {
  lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2");
  const char *p = lua_tostring(L, -1);
  if (p == NULL) {
    lua_pop(L, 1);
    lua_pushstring(L, firstline ? PROMPT : PROMPT2);
    p = lua_tostring(L, -1);
  }
  return p; /* stays on the stack until the line is read */
}

/* Read the next line, keep it in the history and push it (on the first
 * line a leading '=' becomes 'return', as Lua 5.2 did). Returns LINE_OK,
 * or LINE_EOF / LINE_INTERRUPTED with nothing pushed. */
static int pushline(lua_State *L, int firstline) {
  const char *prompt = get_prompt(L, firstline);
  int interrupted;
  char *b = read_line(prompt, &interrupted);
  lua_pop(L, 1);
  if (b == NULL) return interrupted ? LINE_INTERRUPTED : LINE_EOF;
  saveline(b);
  if (firstline && b[0] == '=')
    lua_pushfstring(L, "return %s", b + 1);
  else
    lua_pushstring(L, b);
  free(b);
  return LINE_OK;
}

/* --- compiling ------------------------------------------------------------------------------ */

/* What loadline found, beside a Lua status (LUA_OK or an error). */
enum { LOAD_EOF = -1, LOAD_SKIP = -2, LOAD_HELP = -3 };

/* How an expression is returned: `return select(1, <expr>)` rather than
 * `return <expr>`, where a call would be a tail call and leave no frame of
 * the typed line in a traceback; the newline ends a trailing comment. Only
 * while the global select is still Lua's own (kept at start). */
#define SELECT_KEY "cell.repl.select"
static const char *return_format(lua_State *L) {
  lua_getglobal(L, "select");
  lua_getfield(L, LUA_REGISTRYINDEX, SELECT_KEY);
  int same = !lua_isnil(L, -1) && lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same ? "return select(1, %s\n);" : "return %s\n;";
}

/* Try the line on the stack top as `return <line>;` so an expression prints
 * its value. Leaves the compiled chunk (replacing the line) on success. */
static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, return_format(L), line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK)
    lua_remove(L, -2); /* the modified line */
  else
    lua_pop(L, 2); /* the error and the modified line */
  return status;
}

/* Whether a syntax error only says the chunk ended too soon: Lua 5.4 ends
 * such messages with "<eof>", 5.1 and LuaJIT with "'<eof>'". Pops it then. */
static int incomplete(lua_State *L, int status) {
  if (status != LUA_ERRSYNTAX) return 0;
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  static const char mark[] = "<eof>", mark51[] = "'<eof>'";
  size_t m = sizeof mark - 1, m51 = sizeof mark51 - 1;
  if ((len >= m && strcmp(msg + len - m, mark) == 0) ||
      (len >= m51 && strcmp(msg + len - m51, mark51) == 0)) {
    lua_pop(L, 1);
    return 1;
  }
  return 0;
}

/* If s[i] opens a long bracket ([[, [=[, ...), the index of the last
 * character of its closing bracket (or end), else -1. */
static long skip_long(const char *s, long i, long end) {
  long j = i + 1, level = 0;
  while (j < end && s[j] == '=') j++, level++;
  if (j >= end || s[j] != '[') return -1;
  for (j++; j < end; j++) {
    if (s[j] != ']') continue;
    long k = j + 1, l = 0;
    while (k < end && s[k] == '=') k++, l++;
    if (l == level && k < end && s[k] == ']') return k;
  }
  return end;
}

/* The offset just past the last ';' of s[0..end) outside strings,
 * comments and brackets, or -1. */
static long last_semicolon(const char *s, long end) {
  long last = -1;
  int depth = 0;
  for (long i = 0; i < end; i++) {
    char c = s[i];
    long close;
    if (c == '"' || c == '\'') {
      for (i++; i < end && s[i] != c; i++)
        if (s[i] == '\\') i++;
    } else if (c == '-' && i + 1 < end && s[i + 1] == '-') {
      if (i + 2 < end && s[i + 2] == '[' && (close = skip_long(s, i + 2, end)) >= 0)
        i = close;
      else
        while (i < end && s[i] != '\n') i++;
    } else if (c == '[' && (close = skip_long(s, i, end)) >= 0) {
      i = close;
    } else if (c == '(' || c == '{' || c == '[') {
      depth++;
    } else if (c == ')' || c == '}' || c == ']') {
      depth--;
    } else if (c == ';' && depth == 0) {
      last = i + 1;
    }
  }
  return last;
}

/* `a = f(); a.shape`: statements, then an expression whose value is
 * printed. Tries `<statements> return <expression>;` at the last top-level
 * ';' of the line on the stack top; on success pushes the chunk above the
 * line, else leaves the line alone and returns the error status. */
static int split_return(lua_State *L) {
  size_t len;
  const char *line = lua_tolstring(L, -1, &len);
  long at = last_semicolon(line, (long)len);
  if (at < 0) return LUA_ERRSYNTAX;
  const char *rest = line + at;
  while (*rest == ' ' || *rest == '\t') rest++;
  if (*rest == '\0') return LUA_ERRSYNTAX;
  const char *fmt = return_format(L);
  lua_pushlstring(L, line, (size_t)at);
  lua_pushfstring(L, fmt, rest);
  lua_concat(L, 2);
  lua_pushvalue(L, -1); /* the text, twice, so the pops below stay as they were */
  const char *text = lua_tostring(L, -1);
  int status = luaL_loadbuffer(L, text, strlen(text), "=stdin");
  if (status == LUA_OK) { /* the line, then the chunk, as addreturn leaves them */
    lua_remove(L, -2);
    lua_remove(L, -2);
  } else {
    lua_pop(L, 3);
  }
  return status;
}

/* Compile the text at index 1 as a statement, reading continuation lines
 * while it is incomplete (as lua.c). Leaves the chunk or the error on the
 * stack top; LOAD_SKIP when a Ctrl-C abandoned the chunk. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    if (!incomplete(L, status)) return status;
    int got = pushline(L, 0);
    if (got == LINE_INTERRUPTED) return LOAD_SKIP;
    if (got == LINE_EOF) /* input ended inside a chunk: report it as Lua would */
      return luaL_loadbuffer(L, line, len, "=stdin");
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3); /* the joined text, at index 1 */
  }
}

/* Whether the line at the stack top asks for help (`?name`, spaces
 * allowed before the '?'); if so it is replaced by the name. */
static int helpline(lua_State *L) {
  const char *s = lua_tostring(L, -1);
  while (*s == ' ' || *s == '\t') s++;
  if (*s != '?') return 0;
  lua_pushstring(L, s + 1);
  lua_remove(L, -2);
  return 1;
}

/* Read and compile one statement: LOAD_EOF at end of input, LOAD_SKIP
 * after a Ctrl-C, LOAD_HELP with the name alone on the stack, else the
 * Lua status with the chunk (or error) alone on the stack. */
static int loadline(lua_State *L) {
  lua_settop(L, 0);
  int got = pushline(L, 1);
  if (got == LINE_EOF) return LOAD_EOF;
  if (got == LINE_INTERRUPTED) return LOAD_SKIP;
  if (helpline(L)) return LOAD_HELP;
  int status = addreturn(L);
  if (status != LUA_OK) status = split_return(L);
  if (status != LUA_OK) status = multiline(L);
  if (status == LOAD_SKIP) {
    lua_settop(L, 0);
    return LOAD_SKIP;
  }
  lua_remove(L, 1); /* the line */
  return status;
}

/* --- printing ----------------------------------------------------------------------------- */

/* Under pcall, when the REPL module is missing: tostring of each argument,
 * joined by tabs. Calling the global tostring (not lua_tostring) runs
 * __tostring and lets users replace it. */
static int format_plain(lua_State *L) {
  int n = lua_gettop(L);
  luaL_Buffer b;
  lua_getglobal(L, "tostring");
  int tostr = lua_gettop(L);
  luaL_buffinit(L, &b);
  for (int i = 1; i <= n; i++) {
    lua_pushvalue(L, tostr);
    lua_pushvalue(L, i);
    lua_call(L, 1, 1);
    if (!lua_isstring(L, -1)) luaL_error(L, "'tostring' must return a string");
    if (i > 1) luaL_addchar(&b, '\t');
    luaL_addvalue(&b); /* the string on the top */
  }
  luaL_pushresult(&b);
  return 1;
}

/* Write the string on the stack top (if it is one) and a newline; pop it. */
static void write_result(lua_State *L) {
  size_t len;
  const char *s = lua_tolstring(L, -1, &len);
  if (s) {
    fwrite(s, 1, len, stdout);
    if (len == 0 || s[len - 1] != '\n') fputc('\n', stdout);
    fflush(stdout);
  }
  lua_pop(L, 1);
}

/* Print the values a line returned (the whole stack) and keep the first
 * in the global `_`. An error while formatting them (a failing
 * __tostring) is reported with its traceback, and the REPL goes on. */
static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return;
  lua_pushvalue(L, 1);
  lua_setglobal(L, "_");
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  if (!push_repl_fn(L, "format_results")) lua_pushcfunction(L, format_plain);
  lua_insert(L, 1);
  int status = docall(L, n, 1);
  if (status == LUA_OK) {
    write_result(L);
  } else {
    lua_pushfstring(L, "error printing the result: %s", lua_tostring(L, -1));
    lua_remove(L, -2);
    report(L, status);
  }
}

/* `?name`: print repl.help(name). */
static void print_help(lua_State *L) {
  if (!push_repl_fn(L, "help")) {
    lua_pop(L, 1);
    l_message(progname, "help is not available (the cell.repl module did not load)");
    return;
  }
  lua_insert(L, -2);
  int status = docall(L, 1, 1);
  if (status == LUA_OK)
    write_result(L);
  else
    report(L, status);
}

/* --- the REPL --------------------------------------------------------------------------- */

/* The REPL starts with `cell` as a global and the REPL module loaded; if
 * either fails to load, say why and carry on with what there is. */
static void load_globals(lua_State *L) {
  lua_getglobal(L, "select");
  lua_setfield(L, LUA_REGISTRYINDEX, SELECT_KEY);
  lua_getglobal(L, "cell");
  int have = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (!have) load_cell(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, REPL_KEY);
  int status = docall(L, 1, 1);
  if (status == LUA_OK)
    lua_setfield(L, LUA_REGISTRYINDEX, REPL_KEY);
  else
    report(L, status);
  /* help() and traceback() */
  if (push_repl_fn(L, "install_globals")) report(L, docall(L, 0, 0));
}

static void doREPL(lua_State *L) {
  const char *oldprogname = progname;
  progname = NULL; /* errors in the REPL read as the message alone */
  globalL = L;     /* for the completer, which may run before any call */
  struct sigaction before;
  sigaction(SIGINT, NULL, &before);
  setsignal(SIGINT, on_prompt_sigint); /* between calls: see tty_readline */
  if (interactive) {
    rl_readline_name = "cell"; /* for $if cell in ~/.inputrc */
    rl_catch_signals = 0;      /* Ctrl-C is ours: see tty_readline */
    rl_attempted_completion_function = complete;
    rl_completion_display_matches_hook = display_matches;
    rl_sort_completion_matches = 0; /* repl.complete's order: a cell's members before its methods */
    /* '.' and ':' are part of a completion word: cell.ze<TAB>, t:su<TAB>. */
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(+-*/%^~#,[]})";
    history_start();
  }
  load_globals(L);
  in_repl = 1;
  if (interactive) {
    fputs("Tab completes names, ?name shows documentation (?cell.tensor), help() more, Ctrl-D exits.\n", stdout);
    fflush(stdout);
  }
  int status;
  while ((status = loadline(L)) != LOAD_EOF) {
    if (status == LOAD_SKIP) continue;
    if (status == LOAD_HELP) {
      print_help(L);
      continue;
    }
    if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK)
      print_results(L);
    else
      report(L, status);
  }
  if (interactive) {
    fputc('\n', stdout); /* leave the shell's prompt on a line of its own */
    fflush(stdout);
    history_end();
  }
  lua_settop(L, 0);
  free_matches();
  sigaction(SIGINT, &before, NULL);
  progname = oldprogname;
  in_repl = 0;
}

/* --- main ------------------------------------------------------------------------------ */

/* Everything that can raise runs here, under lua_pcall (as lua.c). */
static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script;
  int args = collectargs(argv, &script);
  int optlim = script > 0 ? script : argc;
#if LUA_VERSION_NUM >= 502
  luaL_checkversion(L);
#endif
  if (args == has_error) {
    print_usage(argv[script]);
    return 0;
  }
  if (args & has_v) print_version();
  if (args & has_E) {
    /* Tell the package library to ignore LUA_PATH and friends. */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  setup_package(L, argv[0]);
  createargtable(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART, 0);
#if LUA_VERSION_NUM >= 504
  /* As lua.c, so a script behaves the same under lua5.4 and cell. */
  lua_gc(L, LUA_GCGEN, 0, 0);
#endif
  if (!(args & has_E) && handle_luainit(L) != LUA_OK) return 0;
  if (args & has_e) load_cell(L); /* -e 'code' has `cell` as the prompt does */
  if (!runargs(L, argv, optlim)) return 0;
  if (script > 0 && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & has_i) {
    doREPL(L);
  } else if (script < 1 && !(args & (has_e | has_v))) {
    if (interactive) print_version();
    doREPL(L);
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  omp_env_default(argv);
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    l_message(argv[0], "cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  interactive = isatty(STDIN_FILENO);
  lua_gc(L, LUA_GCSTOP, 0); /* no collections while the state is built */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int result = lua_toboolean(L, -1);
  report(L, status);
  lua_close(L);
  return (result && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
