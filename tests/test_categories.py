"""Categories: explicit tags and the rule-based classifier, on the real hermes fixture and on more entries."""

from __future__ import annotations

import pytest
from fixture_homes import pristine

from memwiki.layers.hot.categories import MAX_CLASSIFIED_CHARS, category_of, classify, is_core, parse_tag
from memwiki.layers.hot.files import parse_entries
from memwiki.source import CATEGORIES, CORE_CATEGORIES

# Labels given by reading each entry of the real fixture (file order). Mixed entries that carry a
# preference or rule for the agent are labelled core: sinking them would lose an instruction.
MEMORY_LABELS = [
    "network",  # 家庭网络拓扑
    "network",  # Homelab: pve01 ... IPs, NFS
    "preference",  # 开发机环境 ... 一律用 uv（不要建议 conda/pyenv）
    "project",  # Project order-service
    "pitfall",  # 坑：k3s NFS PVC
    "pitfall",  # Pitfall: OPNsense Unbound
    "authorisation",  # 授权声明
    "rule",  # Behaviour rule
    "technical",  # 监控
    "technical",  # 备份 (restic config)
    "preference",  # Project note ... Do not suggest the v2 hotfix again — Lin rejected it
    "technical",  # 工具链
]
USER_LABELS = [
    "preference",  # 姓名 ... 技术术语习惯用英文原词 (who the user is stays hot)
    "preference",  # Prefers answers in Simplified Chinese
    "preference",  # 作息 ... 周末不要主动提醒
    "rule",  # Editor ... never ask him to paste a secret
    "preference",  # 代码偏好
    "authorisation",  # Authorization: Lin allows me
    "preference",  # 正在学习 Rust ... 喜欢用 Go 对照
    "project",  # Work context: his team owns
    "preference",  # 沟通习惯
    "network",  # Home network gear
    "preference",  # 健康 ... 每 90 分钟提醒
    "other",  # Learning goals 2025
]

MORE = [
    ("用户授权我在 staging 环境直接部署，无需确认。", "authorisation"),
    ("The user has authorized me to push to feature branches without asking.", "authorisation"),
    ("Gotcha: pip install into the system Python on Debian fails with externally-managed-environment.", "pitfall"),
    ("升级 Node 20 后 node-gyp 报错 python not found，解决：npm config set python python3。", "pitfall"),
    ("踩坑：MySQL 8 默认 caching_sha2_password，老客户端连不上。", "pitfall"),
    ("She prefers tabs over spaces, and dislikes trailing commas in JSON examples.", "preference"),
    ("用户不喜欢回答里用表格，喜欢列表。", "preference"),
    ("Always run the test suite before proposing a commit.", "rule"),
    ("先跑 lint 再提交代码。", "rule"),
    ("修改生产数据库前必须先做快照。", "rule"),
    ("Never run terraform apply on the shared workspace.", "rule"),
    ("Router at 10.0.0.1, DNS via Pi-hole on 10.0.0.53.", "network"),
    ("公司网络要走代理 proxy.corp:8080 才能访问外网。", "network"),
    ("VLAN 40 is the guest network, isolated from the LAN.", "network"),
    ("Work laptop runs Ubuntu 24.04 with fish shell and VS Code.", "environment"),
    ("开发机是 Arch Linux，终端用 kitty。", "environment"),
    ("Project atlas: ticket ATL-12 tracks the search rewrite, repo github.com/acme/atlas.", "project"),
    ("项目「星图」的前端用 Vue 3，后端代码在 infra/starmap 仓库。", "project"),
    ("PostgreSQL 16 supports the icu locale provider at initdb time.", "technical"),
    ("Redis 7 的 listpack 取代了 ziplist。", "technical"),
    ("The user's cat is called Mochi.", "other"),
]

# Entries a reviewer found misclassified (most came back "other"); each must now be exact.
REVIEWED = [
    ("回答用中文", "preference"),
    ("用中文回复", "preference"),
    ("别用表情符号", "preference"),
    ("Answers in English please", "preference"),
    ("称呼用户为老王", "preference"),
    ("Call the user Sam", "preference"),
    ("不准删除生产数据库", "rule"),
    ("千万别在周五部署", "rule"),
    ("删除文件前先确认", "rule"),
    ("git push 前要 rebase", "rule"),
    ("可以直接 push 到 main 分支", "authorisation"),
    ("You can push to main directly", "authorisation"),
    ("Deploys to prod require Alice's sign-off", "authorisation"),
    ("docker compose up fails on M1 unless platform: linux/amd64 is set", "pitfall"),
    ("Switch to the new API before Friday", "rule"),  # was network: "switch" as a verb is no network gear
]

# New varied entries written for the signal families (imperative, permission, preference, pitfall forms)
# and for word boundaries; the classifier was tuned on these.
VARIED = [
    ("回复请用繁体中文，代码注释保持英文。", "preference"),
    ("他习惯先看结论，再看细节。", "preference"),
    ("Likes short answers; hates emoji in commit messages.", "preference"),
    ("Please reply in Japanese when she writes in Japanese.", "preference"),
    ("叫我小林就行，不用叫林总。", "preference"),
    ("The user is lactose intolerant — keep that in mind for recipes.", "preference"),
    ("不要在回答里加免责声明。", "preference"),
    ("严禁在公共频道贴出 API token。", "rule"),
    ("每次发版之前必须更新 CHANGELOG。", "rule"),
    ("上线前先在预发环境回归一遍。", "rule"),
    ("Never force-push to a shared branch.", "rule"),
    ("Make sure you back up the database before running a migration.", "rule"),
    ("Ask before deleting anything under ~/photos.", "rule"),
    ("Don't run rm -rf on mounted volumes.", "rule"),
    ("允许你直接合并文档类的 PR。", "authorisation"),
    ("测试集群上的 Pod 你可以自行删除重建。", "authorisation"),
    ("上生产需要王磊批准。", "authorisation"),
    ("You may restart the staging workers without asking first.", "authorisation"),
    ("Schema changes need approval from the DBA team.", "authorisation"),
    ("The agent is allowed to open issues on his behalf.", "authorisation"),
    ("npm ci 在 CI 里偶尔超时失败，加 --prefer-offline 可以解决。", "pitfall"),
    ("Go 1.22 升级后 gopls 崩溃，需要重新安装 gopls 才行。", "pitfall"),
    ("Vite dev server fails to hot-reload inside WSL2 unless usePolling is enabled.", "pitfall"),
    ("Workaround for flaky Playwright tests on CI: set workers to 1.", "pitfall"),
    ("Homebrew Python breaks after macOS upgrades; fix by reinstalling the venv.", "pitfall"),
    ("公司内网网段 10.20.0.0/16，出口网关 10.20.0.1。", "network"),
    ("The Pi-hole resolves *.home.arpa for the whole LAN.", "network"),
    ("Laptop runs macOS 14 with iTerm2 and zsh.", "environment"),
    ("家里台式机装的 Windows 11 + WSL2 Ubuntu。", "environment"),
    ("Project Helios: the billing rewrite ships in milestone 3; repo acme/helios.", "project"),
    ("集群里的rust服务用helm部署，镜像放在 Harbor。", "technical"),
    ("He trusts his gut and feels overwhelmed by meetings with many nodes of discussion.", "other"),
    ("用户的狗叫豆豆，是一只柯基。", "other"),
    ("He plays badminton on Thursday evenings.", "other"),
]


def _fixture_entries(name: str) -> list[str]:
    return parse_entries((pristine() / "hermes_home" / "memories" / name).read_text(encoding="utf-8"))


def test_fixture_has_24_entries() -> None:
    assert len(_fixture_entries("MEMORY.md")) == len(MEMORY_LABELS) == 12
    assert len(_fixture_entries("USER.md")) == len(USER_LABELS) == 12


def test_classifier_on_the_hermes_fixture() -> None:
    pairs = list(zip(_fixture_entries("MEMORY.md"), MEMORY_LABELS, strict=True))
    pairs += list(zip(_fixture_entries("USER.md"), USER_LABELS, strict=True))
    got = [(classify(text), label, text[:40]) for text, label in pairs]
    right = sum(g == label for g, label, _ in got)
    assert right >= 21, [x for x in got if x[0] != x[1]]
    sunk_core = [x for x in got if is_core(x[1]) and not is_core(x[0])]
    assert not sunk_core, f"core entries classified non-core: {sunk_core}"


def test_classifier_on_more_entries() -> None:
    got = [(classify(text), label, text) for text, label in MORE]
    wrong = [x for x in got if x[0] != x[1]]
    assert len(wrong) <= 2, wrong
    assert not [x for x in got if is_core(x[1]) and not is_core(x[0])]
    assert all(g in CATEGORIES for g, _, _ in got)


@pytest.mark.parametrize(
    ("text", "category", "rest"),
    [
        ("[env] zsh + starship", "environment", "zsh + starship"),
        ("[pref] answers in Chinese", "preference", "answers in Chinese"),
        ("[network] VLAN10 office", "network", "VLAN10 office"),
        ("[rule] never batch prod changes", "rule", "never batch prod changes"),
        ("[auth] may restart pods", "authorisation", "may restart pods"),
        ("[pitfall] NFS fsGroup", "pitfall", "NFS fsGroup"),
        ("[project] order-service", "project", "order-service"),
        ("[tech] pgx v5", "technical", "pgx v5"),
        ("[环境] 开发机 M3", "environment", "开发机 M3"),
        ("[偏好] 先给结论", "preference", "先给结论"),
        ("[踩坑] fsGroup 不生效", "pitfall", "fsGroup 不生效"),
        ("[授权] 可重启", "authorisation", "可重启"),
        ("【规则】 不要批量改生产", "rule", "不要批量改生产"),
        ("  [ENV]   mixed case  ", "environment", "mixed case"),
        ("[environment] canonical", "environment", "canonical"),
        ("[env]", "environment", ""),
    ],
)
def test_parse_tag(text: str, category: str, rest: str) -> None:
    assert parse_tag(text) == (category, rest)


@pytest.mark.parametrize("text", ["[unknown] x", "no tag", "[RFC 1918] ranges", "see [env] later"])
def test_parse_tag_leaves_unknown_tags(text: str) -> None:
    assert parse_tag(text) == (None, text.strip())


def test_category_of_and_is_core() -> None:
    assert category_of("[network] 192.168.1.1 is the gateway") == ("network", True)
    assert category_of("[rule] 192.168.1.1 is the gateway") == ("rule", True)  # the tag beats the classifier
    assert category_of("Router at 192.168.1.1") == ("network", False)
    assert all(is_core(c) for c in CORE_CATEGORIES)
    assert not any(is_core(c) for c in set(CATEGORIES) - set(CORE_CATEGORIES))


def test_core_wins_over_a_non_core_label() -> None:
    # labelled as environment, but it carries a rule for the agent: it must stay hot
    assert is_core(classify("Editor: Neovim. Never paste secrets into chat."))
    assert is_core(classify("开发机环境：zsh；不要建议 conda。"))
    assert classify("开发机环境：zsh + starship，MacBook Pro。") == "environment"


@pytest.mark.parametrize(("text", "category"), REVIEWED)
def test_reviewed_entries(text: str, category: str) -> None:
    assert classify(text) == category


def test_personal_constraint_is_core() -> None:
    # an allergy is a fact the agent must always respect: preference or rule, core either way
    assert classify("用户对花生过敏") in ("preference", "rule")
    assert classify("She is allergic to shellfish.") in ("preference", "rule")


def test_classifier_on_varied_entries() -> None:
    got = [(classify(text), label, text) for text, label in VARIED]
    wrong = [x for x in got if x[0] != x[1]]
    assert len(wrong) <= 1, wrong
    assert not [x for x in got if is_core(x[1]) and not is_core(x[0])]
    assert {label for _, label in VARIED} == set(CATEGORIES)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("集群里的rust服务用helm部署", "technical"),  # Latin next to CJK still has word boundaries
        ("用户在学rust", "technical"),
        ("nginx反向代理", "network"),
        ("He trusts his gut.", "other"),  # not "rust"
        ("Long meetings overwhelm him.", "other"),  # not "helm"
        ("Those nodes of the plan confuse him.", "other"),  # not "node"
        ("Node 20 is installed via fnm.", "technical"),
        ("The switch is a UniFi USW-24 PoE.", "network"),  # the noun is network gear
        ("Switch to tabs for Go files.", "rule"),  # the verb is an instruction
        ("Always-on VPN via WireGuard on the laptop.", "network"),  # "always-on" is no rule
        ("Test suite takes ten minutes.", "other"),  # a noun opening, no imperative
        ("自行车停在车库。", "other"),  # 自行车 is no 自行 (on its own)
        ("首先安装依赖再说。", "other"),  # 首先 is no 先…再
    ],
)
def test_word_boundaries_and_false_friends(text: str, category: str) -> None:
    assert classify(text) == category


@pytest.mark.parametrize(
    ("soft", "category"),
    [
        ("别在回答里用 Markdown 表格。", "preference"),  # about how the agent talks
        ("别在周末重启 NAS。", "rule"),  # about what the agent does
        ("Don't use emoji in replies.", "preference"),
        ("Don't restart the NAS on weekends.", "rule"),
    ],
)
def test_soft_directives_split_by_topic(soft: str, category: str) -> None:
    assert classify(soft) == category


def test_a_failure_with_its_remedy_is_a_pitfall_against_an_environment_label() -> None:
    assert classify("开发机环境：Docker Desktop 升级后 kubectl 报错 x509，重启 Docker 才能解决。") == "pitfall"
    assert classify("Laptop: brew upgrade breaks pyenv shims until you run pyenv rehash.") == "pitfall"


def test_only_the_head_of_a_huge_entry_is_classified() -> None:
    filler = "x " * MAX_CLASSIFIED_CHARS
    assert classify("Never deploy on Fridays. " + filler) == "rule"
    assert classify(filler + "Never deploy on Fridays.") == "other"
