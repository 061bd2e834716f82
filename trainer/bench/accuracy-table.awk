#!/usr/bin/awk -f
# The table of trainer/bench/accuracy-bench.sh from its result lines "ours|torch SEED ACCURACY WALL_SECONDS".
{ acc[$1, $2] = $3; wall[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
function cell(who, s) { return ((who, s) in acc) ? sprintf("%6.2f%% %8.0f s", 100 * acc[who, s], wall[who, s]) : sprintf("%17s", "-") }
END {
    printf "\n| seed | cifar-train test acc, wall | PyTorch peer test acc, wall |\n| --- | --- | --- |\n"
    for (i = 1; i <= n; i++) {
        s = order[i]
        printf "| %s | %s | %s |\n", s, cell("ours", s), cell("torch", s)
        for (w = 1; w <= 2; w++) {
            who = w == 1 ? "ours" : "torch"
            if ((who, s) in acc) { sum[who] += acc[who, s]; sq[who] += acc[who, s] ^ 2; tw[who] += wall[who, s]; cnt[who]++ }
        }
    }
    line = "| **mean** |"
    for (w = 1; w <= 2; w++) {
        who = w == 1 ? "ours" : "torch"
        if (cnt[who]) {
            m = sum[who] / cnt[who]
            sd = cnt[who] > 1 ? sqrt((sq[who] - cnt[who] * m * m) / (cnt[who] - 1)) : 0
            line = line sprintf(" **%.2f%%** (sd %.2f, %d seeds), wall %.0f s |", 100 * m, 100 * (sd > 0 ? sd : 0), cnt[who], tw[who])
        } else
            line = line " - |"
    }
    print line
    if (cnt["ours"] && cnt["torch"])
        printf "\nmean difference cifar-train - PyTorch: %+.2f points\n", 100 * (sum["ours"] / cnt["ours"] - sum["torch"] / cnt["torch"])
}
