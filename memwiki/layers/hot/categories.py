r"""Categories of hot-memory entries: explicit tags (`[env]`, `[偏好]`) and a rule-based classifier.

Core categories (preference, pitfall, rule, authorisation) stay in hot memory; the others may sink
into L2. Sinking a core entry is the costly error, so the classifier lets core win when in doubt:

1. a leading label (`坑：`, `Behaviour rule:`, `开发机环境：`) naming a core category decides;
2. otherwise core signal families in the text score, and the highest wins (ties: authorisation, rule,
   pitfall, preference), even against a non-core label:
   - authorisation: permission forms (授权 / 允许 / 可以直接 / 无需确认 / 需…批准, allowed to / you can /
     can … directly / without asking / sign-off / approval);
   - rule: obligations and prohibitions (必须 / 禁止 / 不准 / 千万 / …前先… / 先…再…, never / always / must /
     make sure / before you);
   - soft directives (别 / 不要 / don't / avoid / an English imperative opening a sentence) are a rule,
     or a preference when the entry is about how the agent talks (answers, tone, emoji, 称呼 …);
   - pitfall: 踩坑 / gotcha / workaround, or a failure followed by its remedy or condition
     (报错…解决, 失败…才行, fails … unless / when, error … fix);
   - preference: likes and habits (喜欢 / 偏好 / 习惯 / 讨厌, prefers / likes / hates / rather), how to answer
     (用中文回复, answer in English), how to address the user (称呼 / call the user), personal constraints
     (过敏 / allergic);
   weak hints (a bare 坑 / 报错 / fails, please) count only when there is no non-core label;
3. otherwise a non-core label decides;
4. otherwise non-core keywords decide: network / environment / project by distinct hits (ties in that
   order), then technical as the fallback for tech records, else "other".

Patterns are compiled with re.ASCII, so `\b` is a Latin word boundary that adjacent CJK text does not
hide: `\brust\b` matches in `学rust` and `rust服务` but not in `trust`.
"""

from __future__ import annotations

import re

from memwiki.source import CATEGORIES, CORE_CATEGORIES

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

MAX_CLASSIFIED_CHARS = 4000  # longer than any hot file (caps are a few thousand chars)

_TAG_RE = re.compile(r"^\s*[\[【]\s*([^\]】\n]{1,24}?)\s*[\]】]\s*")
_LABEL_RE = re.compile(r"^\s*([^:：\n]{1,32}?)\s*[:：]")


def _rx(*patterns: str) -> re.Pattern[str]:
    """One case-insensitive pattern, in ASCII mode so that word boundaries see CJK text (module doc)."""
    return re.compile("|".join(patterns), re.IGNORECASE | re.ASCII)


# Leading labels ("坑：", "Work context:") → category; searched inside the label, first match wins.
_LABELS: list[tuple[str, re.Pattern[str]]] = [
    ("authorisation", _rx(r"授权", r"权限", r"authori[sz]", r"permission")),
    ("rule", _rx(r"规则", r"守则", r"规矩", r"\brules?\b", r"behaviou?r")),
    ("pitfall", _rx(r"坑", r"pitfall", r"gotcha", r"caveat", r"教训", r"lesson", r"workaround", r"注意", r"warning")),
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

# --- Core signal families. Weight 2 is a clear signal (it beats a non-core label); weight 1 is a hint
# that only counts when no non-core label is present (core still wins over plain keywords).
_NOT_END = r"[^，。；！？,;.!?\n]"  # stays inside one clause
_CLAUSE = r"(?:^|(?<=[，。；：、！？,;:.!?(（\s]))"  # a clause or sentence starts here

# Directives addressed to the agent: prohibitions, obligations, orderings ("…前先…", "先…再…").
_RULE_STRONG = _rx(
    r"必须",
    r"务必",
    r"一定要",
    r"禁止",
    r"严禁",
    r"不准",
    r"不许",
    r"不得",
    r"切勿",
    r"千万",
    r"绝不",
    r"绝对不",
    r"决不",
    r"永远不",
    r"一律",
    r"(?<![目以当眼从面往向提])前(?:先|要|得|需|必须|务必|一定)",
    rf"(?<![首优事原率祖预])先{_NOT_END}{{1,30}}(?:再|后|然后)",
    r"\bnever\b",
    r"\balways\b(?!-)",
    r"\bmust\b",
    r"\bmake sure\b",
    r"\bbe sure to\b",
    r"\bunder no circumstances\b",
    r"\bbefore (?:you|any|every|touching)\b",
    r"\bwait for\b",
    r"\bonly after\b",
    r"\bask (?:me|him|her|them|the user|first|before)\b",
    r"(?:\bnever\b|\bdon'?t\b|\bdo not\b|不要|别)[^.;。；]{0,60}(?:without (?:asking|approval|confirmation)|未经)",
)
# Softer directives: rule by default, preference when they are about how the agent talks (see _STYLE).
_DIRECTIVE_SOFT = _rx(
    r"不要",
    r"不用(?!问|再问|确认|再确认)",
    r"请勿",
    rf"{_CLAUSE}别(?![人的处名墅])",
    r"(?<![特区分类告级识性鉴辨差个派])别(?=[用在给把说做让碰动删改提再])",
    r"\bdon'?t\b",
    r"\bdo not\b",
    r"\bavoid\b",
    r"\bstop\b",
    r"\bshould(?:n'?t)?\b",
    r"\bbefore \w+ing\b",
    # an English imperative opening a sentence ("Switch to …", "Run tests …"); verbs that often open a
    # sentence as nouns ("Test suite …", "Update policy …") are left out, and "Switch is …" is a noun
    r"(?:^|(?<=[.;!?]\s))(?:please\s+)?(?:run|use|switch|ask|confirm|wait|keep|stop|remember|ensure|deploy|"
    r"reply|answer|respond|send|move|migrate|rebase)\b"
    r"(?!\s+(?:is|are|was|were|has|have|runs?|uses?|lives?|sits?)\b)(?!\s*[:：])",
)
# Talk about how the agent answers: routes soft directives to preference.
_STYLE = _rx(
    r"回答",
    r"回复",
    r"答复",
    r"解释",
    r"表情",
    r"语气",
    r"口吻",
    r"格式",
    r"表格",
    r"列表",
    r"篇幅",
    r"免责",
    r"提醒",
    r"建议",
    r"称呼",
    r"叫(?:我|他|她)",
    r"问题",
    r"选项",
    r"中文",
    r"英文",
    r"\banswers?\b",
    r"\brepl(?:y|ies)\b",
    r"\brespon",
    r"\btone\b",
    r"\bemoji",
    r"\bformat",
    r"\btables?\b",
    r"\bbullet",
    r"\bpreambles?\b",
    r"\bdisclaimers?\b",
    r"\bsuggest",
    r"\bremind",
    r"\bexplain",
    r"\bsummar",
)
_LANGUAGE = r"(?:中文|英文|汉语|普通话|粤语|日语|日文|韩语|法语|德语|繁体|简体)"
_LANGUAGE_EN = (
    r"(?:simplified |traditional )?"
    r"(?:english|chinese|mandarin|cantonese|japanese|korean|french|german|spanish)"
)

_CORE_SIGNALS: dict[str, list[tuple[re.Pattern[str], int]]] = {
    "authorisation": [
        (
            _rx(
                r"授权",
                r"允许",
                r"批准",
                r"审批",
                r"许可",
                r"准许",
                r"签字",
                r"放行",
                r"可以?直接",
                r"可以?自行",
                r"你可以",
                r"自行(?!车)",
                r"无需(?:再次|再|逐条)?确认",
                r"不(?:用|必|需要)(?:再)?(?:问|确认|请示)",
                rf"需要?{_NOT_END}{{0,12}}(?:同意|点头|首肯|签核)",
            ),
            2,
        ),
        (
            _rx(
                r"authori[sz]",
                r"\bpermission",
                r"\bpermitted\b",
                r"\ballowed to\b",
                r"\ballows? (?:me|you|the assistant|the agent|him|her)\b",
                r"\byou (?:can|may)\b",
                r"\bmay (?:directly|freely)\b",
                r"\bcan\b[^.;]{0,40}\bdirectly\b",
                r"\bwithout (?:asking|confirmation|approval|checking)",
                r"\bsign-?off\b",
                r"\bsign off\b",
                r"\bapprov(?:al|e|ed|es)\b",
                r"\bgo-ahead\b",
                r"\bfeel free\b",
                r"\b(?:is|are) free to\b",
                r"\bneeds? (?:his|her|their|my|an?) (?:ok|okay|approval|sign-?off)\b",
                r"\brequires?\b[^.;]{0,30}\b(?:approval|consent|ok|okay)\b",
            ),
            2,
        ),
    ],
    "rule": [(_RULE_STRONG, 2)],
    "pitfall": [
        (
            _rx(
                r"踩坑",
                r"坑[：:]",
                r"\bgotcha\b",
                r"\bworkaround",
                r"\bbeware\b",
                r"\bwatch out\b",
                r"\bcareful\b",
                r"小心",
                r"当心",
                r"注意[:：]",
                # a failure and how to get round it, in one stretch of text
                r"(?:报错|出错|失败|崩溃|挂掉|挂了|卡住|卡死|超时|不生效|失效|连不上|不兼容|异常)"
                r".{0,80}?(?:解决|修复|办法|绕过|规避|才(?:能|行|可以)|加上|改成|换成|改用)",
                r"\b(?:fail(?:s|ed|ing|ure)?|breaks?|broken|crash(?:es|ed)?|hangs?|errors? out|times? out|"
                r"doesn'?t work|does not work|won'?t work|stuck|flaky)\b"
                r".{0,80}?\b(?:unless|until|fix(?:ed)?|solution|to avoid|workaround|when|if|after)\b",
                r"\berror\b.{0,80}?\bfix",
            ),
            2,
        ),
        (
            _rx(
                r"坑",
                r"\bgotchas\b",
                r"\bpitfalls?\b",
                r"\bcaveats?\b",
                r"报错",
                r"出错",
                r"失败",
                r"崩溃",
                r"不生效",
                r"会导致",
                r"\bfix:",
                r"\b(?:fails|failed|breaks|crashes|crashed|broken)\b",
            ),
            1,
        ),
    ],
    "preference": [
        (
            _rx(
                r"喜欢",
                r"偏好",
                r"讨厌",
                r"厌恶",
                r"希望",
                r"倾向",
                r"更愿意",
                r"宁愿",
                r"宁可",
                r"爱用",
                r"习惯",
                r"而不是",
                r"称呼",
                r"叫(?:我|他|她)",
                r"过敏",
                r"忌口",
                rf"用{_NOT_END}{{0,4}}{_LANGUAGE}",
                rf"{_LANGUAGE}(?:回答|回复|答复|交流|沟通)",
                rf"(?:回答|回复|答复){_NOT_END}{{0,6}}用",
                rf"用{_NOT_END}{{1,8}}(?:回答|回复|答复|交流|沟通)",
                r"请用",
                r"\bprefer(?:s|red|ence)?\b",
                r"\b(?:dis)?likes?\b",
                r"\bloves?\b",
                r"\bhates?\b",
                r"\brather\b",
                r"\binstead of\b",
                r"\bfavou?rite\b",
                r"\ballerg(?:y|ic|ies)\b",
                r"\bintoleran",
                r"\bcall (?:me|him|her|them|the user)\b",
                rf"\b(?:answer|repl|respon|writ|talk|speak|explain|comment)\w*\b.{{0,30}}\bin {_LANGUAGE_EN}\b",
            ),
            2,
        ),
        (_rx(r"\bplease\b", r"^\s*请"), 1),
    ],
}

_NON_CORE_SIGNALS: dict[str, re.Pattern[str]] = {
    "network": _rx(
        r"\b\d{1,3}(?:\.\d{1,3}){3}\b",
        r"\bvlan",
        r"\baccess points?\b",
        r"\brouters?\b",
        r"路由",
        r"\bdns\b",
        r"网络",
        r"网关",
        r"网段",
        r"内网",
        r"外网",
        r"\bgateway\b",
        r"\bsubnets?\b",
        r"子网",
        r"\bwireguard\b",
        r"\bvpn\b",
        r"\bfirewall\b",
        r"防火墙",
        r"\bproxy\b",
        r"代理",
        r"交换机",
        r"\bswitch(?:es)?\b(?!\s+(?:to|from|over|back|off|on)\b)",
        r"\bwi-?fi\b",
        r"\bwan\b",
        r"\blan\b",
        r"\.(?:lan|local|internal|arpa)\b",
        r"\bnas\b",
        r"\bsmb\b",
        r"\bnfs\b",
        r"\bpi-?hole\b",
    ),
    "environment": _rx(
        r"\bmacos\b",
        r"\bmacbook",
        r"\bkeyboard\b",
        r"键盘",
        r"\blinux\b",
        r"\bubuntu\b",
        r"\bdebian\b",
        r"\barch\b",
        r"\bwindows\b",
        r"\bwsl2?\b",
        r"\bshell\b",
        r"\bzsh\b",
        r"\bbash\b",
        r"\bfish\b",
        r"\beditor\b",
        r"\bneovim\b",
        r"\bvim\b",
        r"\bvs ?code\b",
        r"\bi?term(?:inal|2)?\b",
        r"终端",
        r"\btmux\b",
        r"\blaptop\b",
        r"\bmachine\b",
        r"开发机",
        r"台式机",
        r"环境",
        r"笔记本",
        r"操作系统",
        r"\bos\b",
    ),
    "project": _rx(
        r"\bproject\b",
        r"\brepo\b",
        r"\btickets?\b",
        r"项目",
        r"仓库",
        r"\bmilestones?\b",
        r"需求",
        r"迭代",
    ),
    "technical": _rx(
        r"\bpostgres",
        r"\bredis\b",
        r"\bmysql\b",
        r"\bkubernetes\b",
        r"\bk[38]s\b",
        r"\bdocker\b",
        r"\bhelm\b",
        r"\bnginx\b",
        r"\bpython\b",
        r"\bgo\b",
        r"\brust\b",
        r"\bnode(?:\.?js)?\b",
        r"\bnpm\b",
        r"\bsql",
        r"\bapi\b",
        r"版本",
        r"\bversion",
        r"配置",
        r"\bconfig",
        r"监控",
        r"备份",
        r"\bbackups?\b",
        r"\bgrafana\b",
        r"\bprometheus\b",
        r"\bci\b",
        r"\bgithub actions\b",
        r"\bclusters?\b",
        r"集群",
        r"部署",
        r"镜像",
        r"\bharbor\b",
        r"\b(?:aws|gcp|azure|eks|gke|terraform|ansible)\b",
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
    soft = len(_DIRECTIVE_SOFT.findall(text)) * 2
    if soft:
        # "don't / 别 / use …" about how the agent talks is a preference; about what it does, a rule
        target = "preference" if _STYLE.search(text) else "rule"
        scores[target] = scores.get(target, 0) + soft
    return scores


def classify(text: str) -> str:
    """Category of an untagged entry, by rules over Chinese and English keywords (core wins when in doubt).

    Only the first `MAX_CLASSIFIED_CHARS` characters are read: hot entries are far shorter, and untrusted
    text must not make classification slow.
    """
    text = text[:MAX_CLASSIFIED_CHARS]
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
