"""The hermes-agent home and the MemPalace palace the reader, CLI, MCP and site tests read, made at test time.

Everything is written by the upstream code, the way a user's agents would have left it, in a child process
(MemPalace's MCP module takes over stdout on import, and both projects keep process-wide state), once per test
session; each test works on its own copy (`fixture_copies.copy_fixtures`):

- `hermes_home/` (hermes-agent): `SOUL.md`, the persona, in Chinese, written as a file (users write it by
  hand); `config.yaml` through hermes's own `save_config` (its template with the model set); `memories/MEMORY.md`
  (12 entries, 2,133 / 2,200 chars) and `memories/USER.md` (12 entries, 1,274 / 1,375) through `memory_tool()`
  adds, then one real `replace` (the restic retention 7d/4w/6m -> 7d/4w/12m); `state.db` through
  `hermes_state.SessionDB`: 4 sessions (cli, cli, telegram, cli; titles in Chinese and English), 40 messages,
  one assistant `memory` tool call carrying that replace and, as its tool message, the result the tool gave.
- `mempalace_palace/` and `mempalace_config/` (MemPalace): `init`'s room detection and `mine` over a small
  project (`tidepool`: README, docs/architecture.md, docs/decisions_zh.md, src/ingest.py: 9 drawers in rooms
  src and documentation, 4 closets), `mine --mode convos` over a Claude Code JSONL session (5 drawers, wing
  `tidepool_chats`, room `technical`), then the MCP tools: `add_drawer` x3 (tidepool/ops, tidepool/decisions,
  people/team), `diary_write` (agent claude, topic tidepool), `kg_add` x9, `kg_supersede` (tidepool uses
  TimescaleDB 2.13 -> 2.15 at 2025-07-01) and `kg_invalidate` (NB-009 status active, ended 2025-04-30).
  16 drawers in 4 wings and 7 rooms; 14 entities, 10 facts (8 current, 2 ended). Vectors come from
  `homes.HashEmbedding` (nothing is downloaded), recorded as MemPalace's default MiniLM embedder.

Ids made from content (MCP drawers, facts, entities) are MemPalace's own and the same on every run; mined
drawers' ids and every timestamp (hermes's, MemPalace's `filed_at`, the graph's `created_at`) are the build's.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ── hermes-agent home ────────────────────────────────────────────────────────────────────────────────

SOUL = (
    "# 小赫 · Hermes persona\n"
    "\n"
    "你是「小赫」，林晓（Lin Xiao）的个人运维与编程助手，运行在他的 MacBook 和 homelab 上。\n"
    "\n"
    "## 语气 / Tone\n"
    "- 默认用简体中文回答；代码、命令、日志、报错保持英文原文。\n"
    "- 先给结论，再给理由；不寒暄，不用表情符号。\n"
    "- 不确定时直接说“不确定”，并给出验证方法（命令或文档链接）。\n"
    "\n"
    "## 工作方式 / How you work\n"
    "- 动手前先读现有配置和日志，不凭空假设。\n"
    "- 涉及 prod-* 集群的变更：先给出命令和回滚方案，等到明确的“go”再执行。\n"
    "- 命令给可直接复制的一行版本；有风险的命令附带 --dry-run 版本。\n"
    "- 解释 Go 概念时，可以顺带给出 Rust 的对照写法（他在学 Rust）。\n"
    "\n"
    "## Boundaries\n"
    "- Never echo secrets; use `op read` references instead of literal values.\n"
    "- Destructive operations (rm -rf, DROP TABLE, zfs destroy, kubectl delete ns) always need explicit "
    "confirmation, even in the homelab.\n"
)

HERMES_MODEL = {"provider": "openrouter", "default": "anthropic/claude-sonnet-4.5"}
# the restic entry before the one memory tool call in the sessions below replaces it (6m -> 12m)
BACKUP_BEFORE = (
    "备份：restic 每晚 02:30 把 pve01:/etc/pve 和 truenas 的 tank/photos 备份到 Backblaze B2 bucket "
    "lin-homelab-bak，保留策略 7d/4w/6m；每月 1 号做一次 restore 演练。"
)
BACKUP_REPLACE = {
    "action": "replace",
    "target": "memory",
    "old_text": "保留策略 7d/4w/6m",
    "content": (
        "备份：restic 每晚 02:30 把 pve01:/etc/pve 和 truenas 的 tank/photos 备份到 Backblaze B2 bucket "
        "lin-homelab-bak，保留策略 7d/4w/12m，forget 后必须 --prune（每周日 04:00）；每月 1 号做一次 restore 演练。"
    ),
}
BACKUP_CALL_ID = "call_b81ff8dc7f5a44dc9c3279ea"
MEMORY_ENTRIES = [  # preferences, environment, network, projects, pitfalls, rules, authorisations
    (
        "家庭网络拓扑：光猫桥接 → OPNsense 软路由 (192.168.10.1) → 2.5G 交换机；VLAN10 办公、VLAN20 IoT、VLAN30 "
        "homelab；WireGuard 51820/udp 只在 OPNsense WAN 上开放，手机和笔记本走 wg0 回家。"
    ),
    (
        "Homelab: pve01 (Proxmox VE 8.2, 192.168.30.11, 64 GB RAM) hosts k3s VMs k3s-m1/k3s-w1/k3s-w2 "
        "(192.168.30.21-23). NAS truenas (192.168.30.20) exports NFS /mnt/tank/k8s used by the nfs-subdir "
        "provisioner for PVCs."
    ),
    (
        "开发机环境：MacBook Pro M3 Max，zsh + starship；Python 一律用 uv 管理（不要建议 conda/pyenv），Node 用 "
        "fnm，容器用 OrbStack 而不是 Docker Desktop；kubectl 上下文名 homelab / prod-sh / prod-bj。"
    ),
    (
        "Project order-service (Go 1.22, repo git.lin.lan/shop/order-service): Postgres 15 via pgx v5 + sqlc, "
        "Redis 7 for idempotency keys, deployed by ArgoCD app 'order-svc-prod'. `make test-integration` needs "
        "`docker compose up -d pg redis` first."
    ),
    (
        "坑：k3s 上用 NFS PVC 跑 Postgres 时 fsGroup 不生效，容器启动报 `could not change permissions of "
        "directory`；解决办法是加 initContainer 执行 chown -R 999:999 /var/lib/postgresql/data。"
    ),
    (
        "Pitfall: OPNsense Unbound host overrides for *.lin.lan — after adding one, clients still get NXDOMAIN for "
        "up to an hour (negative cache). Fix: Services → Unbound → restart, then `sudo dscacheutil -flushcache` on "
        "macOS."
    ),
    (
        "授权声明：林晓已授权我在 homelab（VLAN30，上下文 homelab）内直接执行 kubectl rollout restart、docker "
        "compose restart 和 helm upgrade --dry-run，无需再次确认；prod-sh / prod-bj 上的任何写操作仍需逐条确认。"
    ),
    (
        "Behaviour rule: for anything touching prod-*, print the exact command plus the rollback command first and "
        "wait for an explicit 'go'. Never batch several prod changes into one step."
    ),
    (
        "监控：Prometheus + Grafana 跑在 k3s 的 monitoring 命名空间，Grafana 在 grafana.lin.lan；Alertmanager "
        "告警发到飞书机器人「SRE-告警」；值班表在飞书文档「SRE 值班 2025Q2」。"
    ),
    BACKUP_BEFORE,
    (
        "Project note: payment-gateway migration from Alipay SDK v2 to v3 is blocked on merchant cert rotation "
        "(ticket SRE-482, owner 王磊). Do not suggest the v2 hotfix again — Lin rejected it on 2025-05-12."
    ),
    (
        "工具链：k8s 清单用 kustomize + ArgoCD 管理（repo git.lin.lan/infra/gitops），Helm 只用于第三方 chart；"
        "Secret 用 sops + age 加密，age 私钥在 1Password 条目「homelab-age」。"
    ),
]
USER_ENTRIES = [
    "姓名：林晓（Lin Xiao），上海，某电商公司 SRE 负责人（带 6 人小组）；工作语言中文，技术术语习惯用英文原词。",
    (
        "Prefers answers in Simplified Chinese with commands/code in English; dislikes long preambles — conclusion "
        "first, then reasons."
    ),
    "作息：工作日 10:00–19:00（Asia/Shanghai），周三晚上固定做 homelab 维护；周末不要主动提醒工作上的事。",
    (
        "Editor: Neovim (LazyVim) inside tmux in WezTerm. Secrets live in 1Password and are read with the `op` CLI "
        "— never ask him to paste a secret into chat."
    ),
    (
        '代码偏好：Go 代码遵循 uber-go/guide，错误用 fmt.Errorf("...: %w", err) 包装；不喜欢 ORM，偏好 sqlc；'
        "提交信息用 Conventional Commits。"
    ),
    (
        "Authorization: Lin allows me to read (not modify) anything under ~/work and ~/homelab without asking each "
        "time; writes outside the current repo need his OK."
    ),
    "正在学习 Rust（读到《Rust 程序设计语言》第 10 章 泛型与 trait），喜欢用 Go 对照 Rust 讲概念。",
    (
        "Work context: his team owns order-service, payment-gateway and the shared Postgres fleet (prod-sh "
        "primary, prod-bj standby); he is on call one week in six."
    ),
    "沟通习惯：需要他做决定时，给 2–3 个选项并标出推荐项；不要一次抛出十几个问题。",
    (
        "Home network gear besides the homelab: UniFi U6-Pro access points on VLAN10/20 and a Raspberry Pi 4 "
        "running Home Assistant on VLAN20."
    ),
    "健康：颈椎不好，工作日长时间会话时每 90 分钟提醒他起身活动一次。",
    (
        "Learning goals 2025: pass the CKA exam in Q3, finish the Rust book, give one internal tech talk per "
        "quarter (next: pgbouncer transaction-mode pitfalls)."
    ),
]
TOOL_CALL = object()  # in SESSIONS: the assistant's memory tool call (BACKUP_REPLACE) and its result
TOOL_SESSION = 2  # the index of the session holding it (later sessions' system prompts show its result)
SESSIONS = [  # id, source, title, turns
    (
        "20261130_030058_12a316",
        "cli",
        "k3s Postgres PVC 权限问题",
        [
            (
                "user",
                (
                    "k3s 上新部署的 postgres 一直 CrashLoopBackOff，日志是 `initdb: error: could not change "
                    'permissions of directory "/var/lib/postgresql/data": Operation not permitted`，PVC 用的是 '
                    "nfs-subdir。"
                ),
            ),
            (
                "assistant",
                (
                    "结论：这是 NFS 导出 + root_squash 导致的权限问题，fsGroup 对 NFS 卷不生效。\n"
                    "\n"
                    "理由：nfs-subdir provisioner 创建的目录属主是 nobody:nogroup，postgres 镜像以 uid 999 运行，"
                    "initdb 需要 chmod 0700 数据目录。\n"
                    "\n"
                    "先确认一下：`kubectl -n db exec deploy/pg -- ls -ln /var/lib/postgresql` 看属主。"
                ),
            ),
            ("user", "确实是 65534:65534。TrueNAS 那边能不能直接关 root_squash？"),
            (
                "assistant",
                (
                    "可以但不建议：关掉 root_squash 相当于任何能挂载这个导出的客户端都拥有 root。更稳妥的做法是加一个 "
                    "initContainer：\n"
                    "\n"
                    "```yaml\n"
                    "initContainers:\n"
                    "  - name: fix-perms\n"
                    "    image: busybox:1.36\n"
                    '    command: ["sh", "-c", "chown -R 999:999 /var/lib/postgresql/data"]\n'
                    "    securityContext: {runAsUser: 0}\n"
                    "    volumeMounts:\n"
                    "      - {name: data, mountPath: /var/lib/postgresql/data}\n"
                    "```\n"
                    "\n"
                    "前提是 TrueNAS 导出设置 Maproot User=root，只对 192.168.30.0/24 生效。"
                ),
            ),
            (
                "user",
                (
                    "maproot 只给 VLAN30 可以接受。加上之后 initContainer 成功了，但 postgres 还是报 `data directory "
                    "has wrong ownership`。"
                ),
            ),
            (
                "assistant",
                (
                    "这说明 chown 生效了，但 postgres 用了 PGDATA 子目录。官方镜像建议 "
                    "PGDATA=/var/lib/postgresql/data/pgdata，避免挂载点本身的属性干扰。把 env 加上 `PGDATA: "
                    "/var/lib/postgresql/data/pgdata` 再滚动一次：`kubectl -n db rollout restart deploy/pg`（homelab "
                    "内，已授权直接执行）。"
                ),
            ),
            ("user", "好了，Running 了。顺便问一下，这种情况 StatefulSet 比 Deployment 更合适吧？"),
            (
                "assistant",
                (
                    "是的。单实例 Postgres 用 StatefulSet 更合适：稳定的网络标识（pg-0.pg）、volumeClaimTemplates 保证 "
                    "PVC 与 Pod 一一对应、滚动时先删后建，不会出现两个 Pod 同时挂同一个卷。迁移步骤：\n"
                    "1. `pg_dumpall` 备份；\n"
                    "2. 创建 StatefulSet（replicas=1）与 headless Service；\n"
                    "3. 恢复数据后删掉旧 Deployment。"
                ),
            ),
            ("user", "记一下这个坑，下次别再踩了。"),
            (
                "assistant",
                ("已记录到 memory：NFS PVC 上 fsGroup 不生效，用 initContainer chown 999:999 + PGDATA 子目录。"),
            ),
        ],
    ),
    (
        "20261130_030059_97c858",
        "cli",
        "Unbound host override NXDOMAIN",
        [
            (
                "user",
                (
                    "I added a host override grafana.lin.lan -> 192.168.30.21 in OPNsense Unbound but my Mac still "
                    "gets NXDOMAIN. dig @192.168.10.1 works though."
                ),
            ),
            (
                "assistant",
                (
                    "If `dig @192.168.10.1 grafana.lin.lan` answers correctly, Unbound is fine and the stale answer is "
                    "cached on the client side. macOS caches negative answers too. Run:\n"
                    "\n"
                    "```\n"
                    "sudo dscacheutil -flushcache; sudo killall -HUP mDNSResponder\n"
                    "```\n"
                    "\n"
                    "Then check which resolver the Mac actually uses: `scutil --dns | grep nameserver`."
                ),
            ),
            ("user", "scutil shows 100.64.0.1 first — that's Tailscale MagicDNS."),
            (
                "assistant",
                (
                    "That's the real cause. With MagicDNS on, queries go to 100.100.100.100 first, which doesn't know "
                    "lin.lan. Two options:\n"
                    "1. In the Tailscale admin console add a split-DNS entry: lin.lan → 192.168.10.1.\n"
                    "2. Or disable 'Use Tailscale DNS' on the Mac while at home.\n"
                    "\n"
                    "Option 1 also fixes it when you are away via the subnet router."
                ),
            ),
            ("user", "Split DNS added. Works now. Why did it take an hour before though, even before Tailscale?"),
            (
                "assistant",
                (
                    "Unbound itself caches NXDOMAIN for the SOA minimum TTL of the zone (default 3600 s for local "
                    "zones on OPNsense) if a client asked before the override existed. Restarting Unbound after adding "
                    "an override clears that cache, so it is worth making a habit of Services → Unbound DNS → Restart."
                ),
            ),
            ("user", "Can I lower that negative TTL?"),
            (
                "assistant",
                (
                    "Yes: in Unbound advanced settings set `cache-max-negative-ttl: 60`. Trade-off: slightly more "
                    "upstream queries for genuinely nonexistent names, negligible for a homelab."
                ),
            ),
            ("user", "Done, thanks. Please remember the restart step."),
            (
                "assistant",
                (
                    "Noted in memory: after adding an Unbound host override, restart Unbound and flush the macOS "
                    "cache; MagicDNS needs split DNS for lin.lan."
                ),
            ),
        ],
    ),
    (
        "20261130_030100_b63baf",
        "telegram",
        "restic 备份保留策略调整",
        [
            ("user", "restic 的 B2 账单这个月涨到 9 美元了，看看是哪个快照占的空间多？"),
            (
                "assistant",
                (
                    "先看各路径的原始数据量：`restic -r b2:lin-homelab-bak:/ stats --mode raw-data --tag photos` 和 "
                    "`--tag pve` 分别跑一次。照片库通常是大头，/etc/pve 很小。"
                ),
            ),
            ("user", "photos 420GB，pve 才 30MB。照片每月新增大概 15GB。"),
            (
                "assistant",
                (
                    "那账单基本是照片本身的体积（B2 约 $6/TB/月，420GB ≈ $2.5），多出来的部分来自 forget 之后没有 "
                    "prune。确认一下：`restic snapshots --compact | tail` 和 `restic prune --dry-run`，看看可回收多少。"
                ),
            ),
            ("user", "prune --dry-run 显示可以回收 610GB！原来一直只 forget 没 prune。"),
            (
                "assistant",
                (
                    "对，`restic forget` 只删快照引用，不删数据块。建议在 cron 里改成 `restic forget --keep-daily 7 "
                    "--keep-weekly 4 --keep-monthly 12 --prune`，并且 prune 放在每周日凌晨跑，避免和 02:30 "
                    "的备份窗口冲突。"
                ),
            ),
            ("user", "好，保留策略就改成 7d/4w/12m，帮我更新一下记忆。"),
            ("assistant", TOOL_CALL),
            ("assistant", "已更新记忆：restic 保留策略改为 7d/4w/12m，并注明 forget 后要 --prune。"),
        ],
    ),
    (
        "20261130_030102_7b23c3",
        "cli",
        "order-service idempotency key TTL",
        [
            (
                "user",
                (
                    "order-service 的幂等键现在 Redis TTL 是 24h，支付回调有时候 48 小时后才重试，导致重复扣库存。How "
                    "should I fix this properly?"
                ),
            ),
            (
                "assistant",
                (
                    "Short answer: don't rely on Redis TTL as the source of truth for idempotency. Persist the "
                    "idempotency key in Postgres with a unique constraint, and use Redis only as a fast-path cache.\n"
                    "\n"
                    "```sql\n"
                    "CREATE TABLE idempotency_keys (\n"
                    "  key text PRIMARY KEY,\n"
                    "  order_id bigint NOT NULL,\n"
                    "  response jsonb,\n"
                    "  created_at timestamptz NOT NULL DEFAULT now()\n"
                    ");\n"
                    "```\n"
                    "\n"
                    "The insert and the stock decrement must happen in the same transaction."
                ),
            ),
            ("user", "用 sqlc 的话，INSERT ... ON CONFLICT DO NOTHING 之后怎么判断是不是重复请求？"),
            (
                "assistant",
                (
                    "用 `RETURNING`：冲突时没有返回行，sqlc 生成的 `:one` 查询会返回 `pgx.ErrNoRows`。\n"
                    "\n"
                    "```go\n"
                    "row, err := q.InsertIdempotencyKey(ctx, arg)\n"
                    "if errors.Is(err, pgx.ErrNoRows) {\n"
                    "    // duplicate: load stored response and return it\n"
                    "    return q.GetIdempotencyResponse(ctx, arg.Key)\n"
                    "}\n"
                    "if err != nil {\n"
                    '    return fmt.Errorf("insert idempotency key: %w", err)\n'
                    "}\n"
                    "```"
                ),
            ),
            ("user", "Table will grow forever though. Partition by month?"),
            (
                "assistant",
                (
                    "Monthly range partitioning on created_at works, but the primary key must then include created_at, "
                    "which breaks the uniqueness guarantee across partitions. Simpler: keep one table and delete rows "
                    "older than 30 days in a nightly job (`DELETE ... WHERE created_at < now() - interval '30 days'` "
                    "in batches of 10k). At your volume (~2M callbacks/month) that is fine."
                ),
            ),
            ("user", "OK. Redis 那层还要吗？"),
            (
                "assistant",
                (
                    "保留，但只作为缓存：先查 Redis，命中直接返回；未命中再走 Postgres 事务。TTL 可以保持 24h，"
                    "因为过期后会落到 Postgres 兜底，不再有正确性问题。"
                ),
            ),
            ("user", "明白了，我去写 migration。"),
            (
                "assistant",
                (
                    "好。migration 建议用 goose 的 `-- +goose NO TRANSACTION` 以外的默认模式，表很小可以直接建；"
                    "上线顺序：先部署写双份（Redis + PG）的版本，再切换读路径。"
                ),
            ),
        ],
    ),
]

# ── MemPalace palace ─────────────────────────────────────────────────────────────────────────────────

PROJECT_NAME = "tidepool"
PROJECT_FILES = {
    "README.md": """# tidepool

Telemetry ingest for the coastal buoy network run by the Ningbo marine lab.
Buoys push 1 Hz sensor frames (water temperature, salinity, wave height, GPS) over
NB-IoT to an MQTT broker; `tidepool` validates them, deduplicates retransmits and
writes them to TimescaleDB.

## 快速开始

```bash
uv sync
docker compose up -d mosquitto timescaledb
uv run tidepool ingest --broker mqtt://localhost:1883 --dsn postgres://tide@localhost/tide
```

## 目录

- `src/ingest.py` — MQTT 订阅、帧校验、去重、批量写入
- `docs/architecture.md` — 架构与数据流
- `docs/decisions_zh.md` — 架构决策记录（中文）

Maintainers: 陈海 (Chen Hai, backend), Priya Raman (data quality).
""",
    "docs/architecture.md": """# Architecture

## Data flow

1. Each buoy (currently 37 units, IDs `NB-001`…`NB-037`) publishes a CBOR frame
   every second to `buoys/<id>/frame` on the Mosquitto broker (QoS 1).
2. `tidepool ingest` subscribes with a shared subscription `$share/ingest/buoys/+/frame`
   so that three replicas split the load.
3. Frames are validated against the sensor ranges in `SENSOR_LIMITS`; out-of-range
   values are kept but flagged (`qc_flag = 4`, following the IOOS QARTOD convention).
4. Retransmitted frames are dropped using a Redis set keyed by `(buoy_id, seq)` with a
   10 minute TTL.
5. Valid frames are buffered and written with `COPY` in batches of 500 rows or every
   2 seconds, whichever comes first.

## Storage

TimescaleDB hypertable `frames` partitioned by `ts` (1 day chunks), compression
enabled after 7 days, retention 2 years. Continuous aggregate `frames_10min`
feeds the public dashboard.

## Known limits

- NB-IoT uplink drops to ~0.2 Hz during typhoon conditions; gaps are expected, not errors.
- Clock drift on older buoys (NB-001…NB-012) can reach 4 s/day; we trust the broker
  receive time when |device_ts - receive_ts| > 30 s.
""",
    "docs/decisions_zh.md": """# 架构决策记录

## ADR-001 选择 TimescaleDB 而不是 InfluxDB（2024-11-02）

- 背景：需要和现有的 PostGIS 轨迹数据做 JOIN，并且团队熟悉 SQL。
- 决定：使用 TimescaleDB 2.13，hypertable 按天分块。
- 后果：写入吞吐足够（峰值约 40 帧/秒），但压缩策略需要手动调优。

## ADR-002 去重放在 Redis 而不是数据库唯一索引（2025-01-15）

- 背景：NB-IoT 网络在信号差时会重传，同一帧可能到达 3–5 次。
- 决定：用 Redis 集合 `(buoy_id, seq)`，TTL 10 分钟；数据库不建唯一索引，避免 COPY 失败。
- 后果：Redis 重启会导致短时间重复写入，可以接受，由夜间任务清理。

## ADR-003 台风期间的降级策略（2025-05-20）

- 背景：2024 年台风“贝碧嘉”期间浮标上行频率降到 0.2 Hz，告警风暴淹没了值班群。
- 决定：当超过 50% 浮标同时掉线时，告警合并为一条“区域性通信降级”，不再逐个浮标告警。
- 负责人：陈海；复盘文档在飞书「台风季运维手册」。
""",
    "src/ingest.py": '''"""MQTT -> TimescaleDB ingest loop for tidepool buoys."""
import time
from dataclasses import dataclass

import cbor2
import psycopg
import redis

SENSOR_LIMITS = {
    "water_temp_c": (-2.0, 35.0),
    "salinity_psu": (0.0, 42.0),
    "wave_height_m": (0.0, 20.0),
}
BATCH_ROWS = 500
FLUSH_SECONDS = 2.0
DEDUP_TTL_S = 600


@dataclass
class Frame:
    buoy_id: str
    seq: int
    ts: float
    values: dict
    qc_flag: int = 1


def validate(frame: Frame) -> Frame:
    """Flag (not drop) out-of-range values, QARTOD style: 1=good, 4=fail."""
    for key, (lo, hi) in SENSOR_LIMITS.items():
        v = frame.values.get(key)
        if v is not None and not (lo <= v <= hi):
            frame.qc_flag = 4
    return frame


def is_duplicate(r: redis.Redis, frame: Frame) -> bool:
    # SET NX returns None when the key already exists -> retransmit
    return r.set(f"seen:{frame.buoy_id}:{frame.seq}", 1, nx=True, ex=DEDUP_TTL_S) is None


class Writer:
    def __init__(self, dsn: str):
        self.conn = psycopg.connect(dsn)
        self.buf: list[Frame] = []
        self.last_flush = time.monotonic()

    def add(self, frame: Frame) -> None:
        self.buf.append(frame)
        if len(self.buf) >= BATCH_ROWS or time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        with self.conn.cursor() as cur, cur.copy(
            "COPY frames (buoy_id, seq, ts, water_temp_c, salinity_psu, wave_height_m, qc_flag) FROM STDIN"
        ) as cp:
            for f in self.buf:
                cp.write_row((f.buoy_id, f.seq, f.ts, f.values.get("water_temp_c"),
                              f.values.get("salinity_psu"), f.values.get("wave_height_m"), f.qc_flag))
        self.conn.commit()
        self.buf.clear()
        self.last_flush = time.monotonic()


def decode(payload: bytes, topic: str) -> Frame:
    raw = cbor2.loads(payload)
    return Frame(buoy_id=topic.split("/")[1], seq=raw["seq"], ts=raw["ts"], values=raw["v"])
''',
}
CONVERSATION_ID = "5b1f0c2e-8d4a-4a57-9a61-3e2f7c9d1a04"  # a Claude Code session file's name
CONVERSATION_WING = "tidepool_chats"
CONVERSATION = [  # (user, [assistant text | (Bash command, its output)]) per exchange
    (
        (
            "台风“蝴蝶”登陆前，NB-017 到 NB-024 这几个浮标的数据延迟越来越大，dashboard 上看有 40 秒以上。"
            "帮我看看是 ingest 的问题还是网络的问题？"
        ),
        [
            (
                "先区分两种延迟：设备时间到 broker 接收时间（网络段），以及 broker 接收到写入 TimescaleDB（ingest "
                "段）。我查一下 ingest 的日志里 flush 的耗时。"
            ),
            (
                "kubectl -n tidepool logs deploy/ingest --since=30m | grep flush | tail -n 5",
                (
                    "flush rows=500 took=0.21s\n"
                    "flush rows=500 took=0.19s\n"
                    "flush rows=137 took=0.05s\n"
                    "flush rows=500 took=0.23s\n"
                    "flush rows=88 took=0.04s"
                ),
            ),
            (
                "ingest 段很健康：每批 COPY 只要 0.2 秒左右。延迟主要在网络段——这几个浮标都在象山港外侧，台风前 "
                "NB-IoT 基站负载高，上行被排队。这和 architecture.md 里写的 “gaps are expected, not errors” 一致。"
            ),
        ],
    ),
    (
        "OK. But the clock-drift rule might be hiding the real delay, right? NB-017 is one of the old units.",
        [
            (
                "Good catch. NB-017 is outside the NB-001…NB-012 range, so it uses its device timestamp unless "
                "|device_ts - receive_ts| > 30 s. When the uplink queues frames for 40 s, we switch to receive "
                "time, which makes the dashboard latency look like ~0 for those frames and ~40 s for the others. I "
                "suggest storing both timestamps: add a `received_at` column and compute latency as `received_at - "
                "ts` explicitly."
            ),
        ],
    ),
    (
        "加一列的话 hypertable 压缩过的 chunk 会不会有问题？",
        [
            (
                "TimescaleDB 2.13 不支持对已压缩 chunk 直接 ADD COLUMN 带默认值，会报错。做法：`ALTER TABLE frames "
                "ADD COLUMN received_at timestamptz;`（不带 DEFAULT、可为空）是允许的，旧数据保持 NULL。升级到 "
                "2.15 之后可以带默认值。"
            ),
        ],
    ),
    (
        "我们下个月本来就要升级到 2.15，那先加可空列。顺便把这个决定记下来。",
        [
            (
                "好的。我会写成 ADR-004：frames 增加可空列 received_at，用于区分网络延迟和 ingest 延迟；"
                "TimescaleDB 升级到 2.15 后再考虑回填。需要我现在改 `src/ingest.py` 的 COPY 列表吗？"
            ),
        ],
    ),
    (
        "Yes, please, and keep the column order stable for the dashboard queries.",
        [
            (
                "Done: `received_at` is appended as the last column in the COPY statement so existing positional "
                "queries keep working. Remember to deploy the migration before the new ingest image, otherwise "
                "COPY will fail on the unknown column."
            ),
        ],
    ),
]
MCP_DRAWERS = [  # wing, room, text, added_by
    (
        "tidepool",
        "ops",
        (
            "台风季运维手册（摘要）：当超过 50% 的浮标同时掉线时，Alertmanager 只发一条“区域性通信降级”告警；"
            "值班同学先看 NB-IoT 基站状态页，再看 broker 的 $SYS/broker/clients/connected。Do NOT restart ingest "
            "replicas during a typhoon — the backlog replays on reconnect and restarts only lose the Redis dedup "
            "window."
        ),
        "make_palace",
    ),
    (
        "tidepool",
        "decisions",
        (
            "ADR-004 (2025-06-03): add nullable column `received_at timestamptz` to hypertable `frames` so that "
            "network latency (received_at - ts) and ingest latency can be told apart. No DEFAULT because TimescaleDB "
            "2.13 cannot add a defaulted column to compressed chunks; backfill after the 2.15 upgrade. Deploy order: "
            "migration first, then the new ingest image (COPY column list changes)."
        ),
        "make_palace",
    ),
    (
        "people",
        "team",
        (
            "Team: 陈海 (Chen Hai) owns the ingest service and the TimescaleDB schema; Priya Raman (Bangalore, "
            "UTC+5:30) owns data quality and the QARTOD flag rules. On-call alternates weekly; handover every Monday "
            "10:00 CST. 陈海更喜欢用中文写复盘文档，Priya 的 review 用英文。"
        ),
        "make_palace",
    ),
]
DIARY = {
    "agent_name": "claude",
    "topic": "tidepool",
    "entry": (
        "Helped 陈海 separate network latency from ingest latency during typhoon prep. Ingest flushes were healthy "
        "(~0.2 s per 500-row COPY); the 40 s delays came from NB-IoT uplink queueing near 象山港. Proposed ADR-004 "
        "(received_at column). Lesson: the 30 s clock-drift fallback can mask real latency."
    ),
}
FACTS = [  # kg_add: subject, predicate, object, valid_from, the room of the MCP drawer it came from
    ("tidepool", "uses", "TimescaleDB 2.13", "2024-11-02", None),
    ("tidepool", "deduplicates_with", "Redis", "2025-01-15", None),
    ("陈海", "maintains", "tidepool", "2024-09-01", None),
    ("Priya Raman", "maintains", "tidepool", "2025-02-10", None),
    ("陈海", "works_at", "宁波海洋实验室 (Ningbo marine lab)", "2022-03-01", None),
    ("NB-017", "located_in", "象山港 (Xiangshan Bay)", "2023-05-01", None),
    ("NB-009", "status", "active", "2023-05-01", None),
    ("frames", "has_column", "received_at", "2025-06-03", "decisions"),
]
SUPERSEDE = {  # kg_supersede: the upgrade (stored as 2025-07-01T00:00:00Z)
    "subject": "tidepool",
    "predicate": "uses",
    "old_object": "TimescaleDB 2.13",
    "new_object": "TimescaleDB 2.15",
    "at": "2025-07-01",
}
INVALIDATE = {"subject": "NB-009", "predicate": "status", "object": "active", "ended": "2025-04-30"}  # kg_invalidate
FACTS_AFTER = [("NB-009", "status", "retired", "2025-04-30")]  # kg_add after the invalidation


# ── building ─────────────────────────────────────────────────────────────────────────────────────────

_BUILD_ENV = "MEMWIKI_TESTS_FIXTURES"  # "<pid>:<folder>": this process's build, whichever import of this module made it


def pristine() -> Path:
    """The folder holding `hermes_home/`, `mempalace_palace/` and `mempalace_config/`, built on first use in this
    process (in a temporary folder removed at exit). Never write into it: copy it (`fixture_copies.copy_fixtures`)."""
    pid, _, folder = os.environ.get(_BUILD_ENV, "").partition(":")
    if pid != str(os.getpid()):  # not built yet (or built by the process this one was forked from)
        base = Path(tempfile.mkdtemp(prefix="memwiki-test-fixtures-"))
        atexit.register(_remove, base, os.getpid())
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), str(base / "fixtures")],
            capture_output=True,
            text=True,
            timeout=600,
            env=_child_env(base),
        )
        if proc.returncode != 0:
            raise RuntimeError(f"building the test fixtures failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
        # in the environment, not in a module global: imported as `fixture_homes` and as `tests.fixture_homes`,
        # this module has two copies in one process, and they share this one build
        folder = str(base)
        os.environ[_BUILD_ENV] = f"{os.getpid()}:{folder}"
    return Path(folder) / "fixtures"


def _remove(base: Path, pid: int) -> None:
    if os.getpid() == pid:  # not from a forked child
        shutil.rmtree(base, ignore_errors=True)


def _child_env(base: Path) -> dict[str, str]:
    """The builder's environment: HOME in the temporary folder, the agents' homes set to the fixtures."""
    root = base / "fixtures"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "MEMPALACE_", "MEMWIKI_"))}
    env.update(
        {
            "HOME": str(base / "home"),  # nothing a tool keeps in ~ lands in the real one
            "HERMES_HOME": str(root / "hermes_home"),
            "MEMPALACE_CONFIG_DIR": str(root / "mempalace_config"),
            "MEMPALACE_PALACE_PATH": str(root / "mempalace_palace"),
            "MEMPALACE_HUB_FORWARD": "0",  # never talk to a palace server some other process runs
            "HF_HUB_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
        }
    )
    return env


def _build(root: Path) -> None:
    """Run in the child process (see `pristine`)."""
    root.mkdir(parents=True)
    _build_hermes(root / "hermes_home")
    _build_palace(root / "mempalace_palace", root / "mempalace_config", root.parent / "sources")
    shutil.rmtree(root.parent / "sources")  # the mined files are gone, as on a machine where they moved
    (root / "hallways.json").unlink()  # MemPalace keeps it beside the palace; only the three folders are wanted


def _build_hermes(home: Path) -> None:
    from hermes_cli.config import save_config
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    from homes import HermesMessage, HermesSession, make_hermes_home, tool_call
    from tools.memory_tool import MemoryStore, memory_tool

    make_hermes_home(home, SOUL, MEMORY_ENTRIES, USER_ENTRIES)
    save_config({"model": HERMES_MODEL})  # hermes's template, with the model the sessions ran on
    token = set_hermes_home_override(home)
    try:
        store = MemoryStore()
        store.load_from_disk()
        prompt_before = _system_prompt(store)
        result = memory_tool(store=store, **BACKUP_REPLACE)
        assert json.loads(result)["success"], result
        store.load_from_disk()
        prompt_after = _system_prompt(store)
    finally:
        reset_hermes_home_override(token)

    sessions = []
    for n, (sid, source, title, turns) in enumerate(SESSIONS):
        messages = []
        for role, content in turns:
            if content is TOOL_CALL:
                call = tool_call("memory", BACKUP_REPLACE, BACKUP_CALL_ID)
                messages.append(HermesMessage("assistant", "", tool_calls=[call]))
                messages.append(HermesMessage("tool", result, tool_name="memory", tool_call_id=BACKUP_CALL_ID))
            else:
                messages.append(HermesMessage(role, content))
        prompt = prompt_after if n > TOOL_SESSION else prompt_before
        sessions.append(HermesSession(sid, title, source, HERMES_MODEL["default"], prompt, messages))
    made = make_hermes_home(home, sessions=sessions)
    assert not made.forced, made.forced


def _system_prompt(store) -> str:  # noqa: ANN001 - hermes's MemoryStore
    """The persona and both memory blocks, as hermes puts them in a session's system prompt."""
    blocks = [store.format_for_system_prompt(target) for target in ("memory", "user")]
    return "\n\n".join([SOUL.rstrip("\n"), *filter(None, blocks)])


def _build_palace(palace: Path, config_dir: Path, sources: Path) -> None:
    from homes import offline_mempalace

    project = sources / PROJECT_NAME
    for name, text in PROJECT_FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    convos = sources / "convos"
    convos.mkdir(parents=True)
    (convos / f"{CONVERSATION_ID}.jsonl").write_text(_claude_code_jsonl(), encoding="utf-8")

    with offline_mempalace(config_dir):
        os.environ["HOME"] = str(sources / "home")  # not beside the palace: ~/.mempalace, ~/.cache stay out of it
        from mempalace.config import MempalaceConfig
        from mempalace.convo_miner import mine_convos
        from mempalace.miner import mine
        from mempalace.room_detector_local import detect_rooms_local

        MempalaceConfig().init()  # `mempalace init`: config.json
        detect_rooms_local(str(project), yes=True)  # `mempalace init --no-llm`: mempalace.yaml from the folders
        mine(str(project), str(palace))
        mine_convos(str(convos), str(palace), wing=CONVERSATION_WING)

        import mempalace.mcp_server as mcp  # the MCP server's tools, as an agent calls them

        mcp._apply_server_flags(palace=str(palace))  # `mempalace-mcp --palace <palace>`: the graph beside it
        ids = {}
        for wing, room, text, added_by in MCP_DRAWERS:
            out = mcp.tool_add_drawer(wing, room, text, added_by=added_by)
            assert out["success"], out
            ids[room] = out["drawer_id"]
        out = mcp.tool_diary_write(**DIARY)
        assert out["success"], out
        for subject, predicate, obj, valid_from, drawer_room in FACTS:
            source = ids[drawer_room] if drawer_room else None
            out = mcp.tool_kg_add(subject, predicate, obj, valid_from=valid_from, source_drawer_id=source)
            assert out["success"], out
        assert mcp.tool_kg_supersede(**SUPERSEDE)["success"]
        assert mcp.tool_kg_invalidate(**INVALIDATE)["success"]
        for subject, predicate, obj, valid_from in FACTS_AFTER:
            assert mcp.tool_kg_add(subject, predicate, obj, valid_from=valid_from)["success"]
        mcp._get_kg().close()  # every fact checkpointed into knowledge_graph.sqlite3, no -wal left
        from mempalace.palace import get_backend_for_palace

        get_backend_for_palace(str(palace)).close_palace(str(palace))


def _claude_code_jsonl() -> str:
    """The conversation as Claude Code writes its session files (one JSON object per line)."""
    lines = []
    for n, (user, parts) in enumerate(CONVERSATION):
        exchange = [{"type": "user", "message": {"role": "user", "content": user}}]
        for part in parts:
            if isinstance(part, str):
                exchange.append({"type": "assistant", "message": {"role": "assistant", "content": [_text(part)]}})
                continue
            command, output = part
            use = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Bash", "input": {"command": command}}
            result = {"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": output}
            exchange.append({"type": "assistant", "message": {"role": "assistant", "content": [use]}})
            exchange.append({"type": "user", "message": {"role": "user", "content": [result]}})
        for line in exchange:
            line.update({"sessionId": CONVERSATION_ID, "timestamp": f"2025-06-03T09:{13 + n:02d}:56.000Z"})
        lines += exchange
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


if __name__ == "__main__":
    _build(Path(sys.argv[1]))
