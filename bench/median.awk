# median.awk - the median of each benchmark line over several runs: the
# input is the runs' `name value unit ...` lines (one file per run, or all
# in one), the output one line per name, in the order names first appear,
# with the median value (the mean of the two middle ones for an even count)
# printed with the first run's decimals, and the first run's unit and notes.
# Lines whose second field is not a number are skipped.
NF >= 2 && $2 ~ /^-?[0-9.]+([eE][+-]?[0-9]+)?$/ {
  k = $1
  if (!(k in cnt)) {
    order[++n] = k
    cnt[k] = 0
    dec[k] = index($2, ".") ? length($2) - index($2, ".") : 0
    rest = ""
    for (i = 3; i <= NF; i++) rest = rest " " $i
    tail[k] = rest
  }
  val[k, ++cnt[k]] = $2 + 0
}
END {
  for (j = 1; j <= n; j++) {
    k = order[j]
    m = cnt[k]
    for (a = 2; a <= m; a++) { # insertion sort of this name's values
      x = val[k, a]
      for (b = a - 1; b >= 1 && val[k, b] > x; b--) val[k, b + 1] = val[k, b]
      val[k, b + 1] = x
    }
    med = m % 2 ? val[k, (m + 1) / 2] : (val[k, m / 2] + val[k, m / 2 + 1]) / 2
    printf "%s " "%." dec[k] "f" "%s\n", k, med, tail[k]
  }
}
