"""Categories of hot-memory entries: explicit tags (`[env]`, `[偏好]`) and a rule-based classifier.

Core categories (preference, pitfall, rule, authorisation) stay in hot memory; the others may sink
into L2. Sinking a core entry is the costly error, so the classifier lets core win when in doubt:

1. a leading label (`坑：`, `Behaviour rule:`, `开发机环境：`) naming a core category decides;
2. otherwise any core signal in the text (授权 / allows me, never / 必须, prefers / 不要, 踩坑 / gotcha)
   decides, even against a non-core label;
3. otherwise a non-core label decides;
4. otherwise non-core keywords decide: network / environment / project by distinct hits (ties in that
   order), then technical as the fallback for tech records, else "other".
"""

from __future__ import annotations

import re

from memory.snapshot import CATEGORIES, CORE_CATEGORIES

# Tag words (lower case) → canonical category. Canonical names are tags too.
TAGS: dict[str, str] = {c: c for c in CATEGORIES} | {
    "pref": "preference",
    "prefs": "preference",
    "偏好": "preference",
    "喜好": "preference",
    "习惯": "preference",
    "pit": "pitfall",
    "gotcha": "pitfall",
    "坑": "pitfall",
    "踩坑": "pitfall",
    "rules": "rule",
    "规则": "rule",
    "规矩": "rule",
    "auth": "authorisation",
    "authorization": "authorisation",
    "authz": "authorisation",
    "permission": "authorisation",
    "授权": "authorisation",
    "权限": "authorisation",
    "net": "network",
    "网络": "network",
    "env": "environment",
    "环境": "environment",
    "proj": "project",
    "项目": "project",
    "tech": "technical",
    "技术": "technical",
    "misc": "other",
    "其他": "other",
    "其它": "other",
}

_TAG_RE = re.compile(r"^\s*[\[【]\s*([^\]】\n]{1,24}?)\s*[\]】]\s*")
_LABEL_RE = re.compile(r"^\s*([^:：\n]{1,32}?)\s*[:：]")


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(patterns), re.IGNORECASE)


# Leading labels ("坑：", "Work context:") → category; searched inside the label, first match wins.
_LABELS: list[tuple[str, re.Pattern[str]]] = [
    ("authorisation", _rx(r"授权", r"权限", r"authori[sz]", r"permission")),
    ("rule", _rx(r"规则", r"守则", r"\brules?\b", r"behaviou?r")),
    ("pitfall", _rx(r"坑", r"pitfall", r"gotcha", r"caveat", r"教训", r"lesson")),
    (
        "preference",
        _rx(
            r"偏好",
            r"喜好",
            r"习惯",
            r"风格",
            r"作息",
            r"姓名",
            r"称呼",
            r"身份",
            r"健康",
            r"prefer",
            r"style",
            r"\bname\b",
            r"identity",
            r"schedule",
            r"health",
            r"habit",
        ),
    ),
    ("network", _rx(r"网络", r"拓扑", r"network", r"\bnet\b", r"\bdns\b", r"\bvlan", r"router", r"路由")),
    (
        "environment",
        _rx(r"环境", r"开发机", r"电脑", r"机器", r"editor", r"\bshell\b", r"\bos\b", r"machine", r"setup"),
    ),
    ("project", _rx(r"项目", r"工作", r"团队", r"project", r"\bwork\b", r"team", r"ticket")),
    ("technical", _rx(r"工具", r"监控", r"备份", r"部署", r"技术", r"tool", r"monitor", r"backup", r"stack", r"tech")),
    ("other", _rx(r"目标", r"学习", r"爱好", r"goal", r"learning", r"hobby", r"family", r"家人")),
]

# Core signals in the text. Weight 2 beats a non-core label; weight 1 only counts without a label.
_CORE_SIGNALS: dict[str, list[tuple[re.Pattern[str], int]]] = {
    "authorisation": [
        (_rx(r"授权", r"authori[sz]", r"allows? me\b", r"允许我", r"permission", r"无需(再次)?确认"), 2),
        (_rx(r"不用(再)?问", r"不必(再)?确认", r"同意", r"批准", r"\ballowed to\b", r"\bmay (directly|freely)\b"), 2),
        (_rx(r"without asking", r"need(s)? (his|her|their|my) (ok|okay|approval)"), 2),
    ],
    "rule": [
        (_rx(r"\bnever\b", r"\balways\b", r"\bmust\b", r"必须", r"务必", r"禁止", r"一律", r"绝不", r"永远不"), 2),
        (_rx(r"先[^，。；,;]{1,30}再", r"\bbefore (any|every|touching)\b", r"wait for an? explicit"), 2),
        (_rx(r"每.{0,12}提醒", r"\bremind\b"), 1),
    ],
    "pitfall": [
        (_rx(r"踩坑", r"\bgotcha", r"\bpitfall:", r"报错.{0,80}(解决|修复|fix)", r"workaround", r"注意[:：]"), 2),
        (_rx(r"\bwatch out\b", r"小心", r"\bcareful\b"), 2),
        (_rx(r"坑", r"pitfalls?\b", r"\bbeware\b", r"\bfix:", r"\bbreaks\b", r"会导致"), 1),
    ],
    "preference": [
        (_rx(r"\bprefers?\b", r"\bdislikes?\b", r"\blikes?\b", r"喜欢", r"偏好", r"不喜欢", r"讨厌", r"希望"), 2),
        (_rx(r"不要", r"\bdon'?t\b", r"\bdo not\b", r"rather than", r"而不是", r"习惯"), 2),
        (_rx(r"^\s*(use|avoid|keep|reply|answer|write|please)\b", r"请用", r"^\s*请", r"回复.{0,6}用"), 2),
    ],
}

_NON_CORE_SIGNALS: dict[str, re.Pattern[str]] = {
    "network": _rx(
        r"\b\d{1,3}(\.\d{1,3}){3}\b",
        r"\bvlan",
        r"router",
        r"路由",
        r"\bdns\b",
        r"网络",
        r"网关",
        r"gateway",
        r"subnet",
        r"子网",
        r"wireguard",
        r"\bvpn\b",
        r"firewall",
        r"防火墙",
        r"proxy",
        r"代理",
        r"交换机",
        r"switch",
        r"\bwi-?fi\b",
        r"\bwan\b",
        r"\blan\b",
        r"\.(lan|local|internal)\b",
        r"\bnas\b",
        r"\bsmb\b",
    ),
    "environment": _rx(
        r"\bmacos\b",
        r"macbook",
        r"keyboard",
        r"键盘",
        r"\blinux\b",
        r"ubuntu",
        r"debian",
        r"\barch\b",
        r"windows",
        r"\bshell\b",
        r"\bzsh\b",
        r"\bbash\b",
        r"\bfish\b",
        r"editor",
        r"neovim",
        r"\bvim\b",
        r"vs ?code",
        r"terminal",
        r"终端",
        r"\btmux\b",
        r"laptop",
        r"machine",
        r"开发机",
        r"环境",
        r"笔记本",
        r"操作系统",
        r"\bos\b",
    ),
    "project": _rx(r"\bproject\b", r"\brepo\b", r"\bticket\b", r"项目", r"仓库", r"\bmilestone", r"需求", r"迭代"),
    "technical": _rx(
        r"postgres",
        r"redis",
        r"kubernetes",
        r"\bk8s\b",
        r"\bk3s\b",
        r"docker",
        r"helm",
        r"nginx",
        r"python",
        r"\bgo\b",
        r"rust",
        r"node",
        r"sql",
        r"\bapi\b",
        r"版本",
        r"version",
        r"配置",
        r"config",
        r"监控",
        r"备份",
        r"backup",
        r"grafana",
        r"prometheus",
        r"\bci\b",
        r"github actions",
        r"cluster",
        r"集群",
        r"\b(aws|gcp|azure|eks|gke|terraform|ansible)\b",
    ),
}


def canonical(name: str) -> str | None:
    """The canonical category for a tag or category name, or None if unknown."""
    return TAGS.get(name.strip().lower())


def parse_tag(text: str) -> tuple[str | None, str]:
    """Split an explicit leading tag (`[env] …`, `【偏好】…`) off `text`.

    Returns (canonical category, text without the tag), or (None, text stripped) when there is no known tag.
    Text that is only a tag gives (category, "").
    """
    match = _TAG_RE.match(text)
    if match:
        category = canonical(match.group(1))
        if category:
            return category, text[match.end() :].strip()
    return None, text.strip()


def _label_category(text: str) -> str | None:
    match = _LABEL_RE.match(text)
    if not match:
        return None
    label = match.group(1)
    for category, pattern in _LABELS:
        if pattern.search(label):
            return category
    return None


def _core_scores(text: str, min_weight: int) -> dict[str, int]:
    scores: dict[str, int] = {}
    for category, signals in _CORE_SIGNALS.items():
        score = sum(len(p.findall(text)) * w for p, w in signals if w >= min_weight)
        if score:
            scores[category] = score
    return scores


def classify(text: str) -> str:
    """Category of an untagged entry, by rules over Chinese and English keywords (core wins when in doubt)."""
    label = _label_category(text)
    if label in CORE_CATEGORIES:
        return label
    core = _core_scores(text, min_weight=2 if label else 1)
    if core:
        # highest score; ties go to the category whose loss would hurt most
        order = ("authorisation", "rule", "pitfall", "preference")
        return max(order, key=lambda c: (core.get(c, 0), -order.index(c)))
    if label:
        return label
    scores = {c: len({m.group(0).lower() for m in p.finditer(text)}) for c, p in _NON_CORE_SIGNALS.items()}
    placed = [c for c in ("network", "environment", "project") if scores[c]]
    if placed:
        return max(placed, key=lambda c: (scores[c], -placed.index(c)))
    return "technical" if scores["technical"] else "other"


def category_of(text: str) -> tuple[str, bool]:
    """(category, tagged): from an explicit tag when there is one, else from the classifier."""
    tag, body = parse_tag(text)
    if tag:
        return tag, True
    return classify(body), False


def is_core(category: str) -> bool:
    """Core categories stay in hot memory; the others may sink into L2."""
    return category in CORE_CATEGORIES
