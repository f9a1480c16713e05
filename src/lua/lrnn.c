/* lrnn.c - the Lua binding of include/cell_rnn.h: core.nnops.rnn, which
 * the recurrent layers (lua/cell/nn/rnn.lua) call once per layer and
 * direction.
 *
 *   rnn(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh, seq_length, reverse)
 *     mode "RNN_TANH" | "RNN_RELU" | "LSTM" | "GRU"; x {T, B, I}; c0,
 *     the biases and seq_length may be nil; returns the packed {T + 2, B, H}
 *     tensor of cell_op_rnn. */
#include "lcell.h"
#include <string.h>

static const char *const modes[] = {"RNN_TANH", "RNN_RELU", "LSTM", "GRU", NULL};

static cell_tensor *opt_tensor(lua_State *L, int i, const char *what) {
  if (lua_isnoneornil(L, i)) return NULL;
  cell_tensor *t = lc_test_tensor(L, i);
  if (!t)
    lc_argerror(L, i, "TypeError: rnn: %s must be a Tensor or nil, got %s", what,
                luaL_typename(L, i));
  return t;
}

static int nn_rnn(lua_State *L) {
  if (lua_type(L, 1) != LUA_TSTRING)
    return lc_argerror(L, 1, "TypeError: rnn: mode must be a string, got %s", luaL_typename(L, 1));
  const char *m = lua_tostring(L, 1);
  int mode = -1;
  for (int i = 0; modes[i]; i++)
    if (strcmp(m, modes[i]) == 0) mode = i;
  if (mode < 0)
    return lc_argerror(L, 1, "ValueError: rnn: mode must be RNN_TANH, RNN_RELU, LSTM or GRU, got '%s'",
                       m);
  cell_tensor *x = lc_check_tensor(L, 2), *h0 = lc_check_tensor(L, 3);
  cell_tensor *c0 = opt_tensor(L, 4, "c0");
  cell_tensor *wih = lc_check_tensor(L, 5), *whh = lc_check_tensor(L, 6);
  cell_tensor *bih = opt_tensor(L, 7, "b_ih"), *bhh = opt_tensor(L, 8, "b_hh");
  cell_tensor *len = opt_tensor(L, 9, "seq_length");
  int reverse = lua_toboolean(L, 10);
  cell_tensor **out = lc_newtensor(L);
  return lc_finish(L, cell_op_rnn((cell_rnn_mode)mode, x, h0, c0, wih, whh, bih, bhh, len, reverse,
                                  out));
}

static const luaL_Reg rnn_funcs[] = {{"rnn", nn_rnn}, {NULL, NULL}};

void lc_register_rnn(lua_State *L, int nnops, int base) { lc_setfuncs(L, nnops, base, rnn_funcs); }
