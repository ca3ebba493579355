"""Blind held-out canaries for the memwiki privacy gate, round 2.

Written blind: the author had no sight of the gate's detectors, of the project's own canary sets, of any
other blind round, of the privacy tests or of any issue text, and did not run the project's code. The shapes
come from what people and agents actually put into a persona file, hot-memory notes, semantic memories,
knowledge-graph facts, chat turns, config snippets and wiki pages.

Names defined here:

KINDS
    kind name -> ``fn(rng) -> (secret, text)``. ``secret`` is the exact substring of ``text`` that must not
    appear anywhere on the published site (the whole secret value, as it is written in the text); ``text`` is
    how a person or an agent would write it (one or several lines). Deterministic for a given
    ``random.Random``, a fresh value on every call.
CHINESE
    the kinds whose text is a Chinese phrasing (simplified or traditional, often mixed with English).
TEXT_MARKERS
    functions that mark ONE note as private the way a person does while typing it (prefixes, suffixes,
    brackets of every style, tags, HTML comments), in English and Chinese.
FRONTMATTER_MARKERS
    YAML frontmatter entries (as dicts) meaning "this wiki page is private".
PERSONA_PRIVATE_HEADINGS
    Markdown headings that open a private section of a persona file.
ORDINARY
    ordinary technical strings, many of them near-misses, that are not secrets and must be published unchanged.

Standard library only. Check digits are valid wherever the real thing has them: Luhn (cards, Canadian SIN),
IBAN mod-97 (and the national checks of FR/BE/ES), GB 11643 (Chinese id), ABA routing, CPF, BSN, NIR, DNI,
HKID, Taiwan id, the BIP-39 checksum (English and Chinese lists) and Base58Check (WIF, xprv).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from urllib.parse import quote

Gen = Callable[[random.Random], tuple[str, str]]

KINDS: dict[str, Gen] = {}
_ZH: set[str] = set()


def _kind(name: str, zh: bool = False) -> Callable[[Gen], Gen]:
    def register(fn: Gen) -> Gen:
        KINDS[name] = fn
        if zh:
            _ZH.add(name)
        return fn

    return register


# ---------------------------------------------------------------------------------------------------------------
# alphabets and small helpers

_LO = string.ascii_lowercase
_UP = string.ascii_uppercase
_DIG = string.digits
_ALNUM = _LO + _UP + _DIG
_LODIG = _LO + _DIG
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B32 = _UP + "234567"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _digits(rng: random.Random, n: int, first: str = "123456789") -> str:
    return rng.choice(first) + _s(rng, _DIG, n - 1)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _fence(rng: random.Random, text: str, lang: str = "") -> str:
    """Sometimes wrap a snippet in a Markdown code fence, as people paste it into notes."""
    roll = rng.random()
    if roll < 0.35:
        return f"```{lang}\n{text}\n```"
    if roll < 0.45:
        return f"~~~\n{text}\n~~~"
    return text


def _group(num: str, sizes: list[int], sep: str = " ") -> str:
    out, i = [], 0
    for n in sizes:
        if i >= len(num):
            break
        out.append(num[i : i + n])
        i += n
    if i < len(num):
        out.append(num[i:])
    return sep.join(out)


def _b64u(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _xml_escape(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------------------------------
# passwords as people pick them

_PW_WORDS = [
    "Maple",
    "tiger",
    "Orion",
    "falcon",
    "Banana",
    "river",
    "Coffee",
    "dragon",
    "Nimbus",
    "otter",
    "Violet",
    "rocket",
    "Mango",
    "harbor",
    "Pixel",
    "Ginger",
    "Snowy",
    "biscuit",
    "Kestrel",
    "lemon",
    "Juniper",
    "walrus",
    "Pepper",
    "castle",
    "Bluebird",
    "meadow",
    "Tango",
    "cobalt",
    "Sparrow",
    "willow",
]
_PW_PUNCT = "!;,#&()*@$%?.-_+=~^"


def _pw(rng: random.Random, avoid: str = "") -> str:
    """A password the way people choose one: words, a year or a number, punctuation in the middle."""
    punct = [p for p in _PW_PUNCT if p not in avoid] or ["9"]
    w1, w2 = rng.sample(_PW_WORDS, 2)
    p1, p2 = rng.choice(punct), rng.choice(punct)
    year, n2 = rng.randint(1970, 2024), rng.randint(2, 99)
    leet = w1.translate(str.maketrans("aeioAEIO", "4310@310"))
    shapes = [
        f"{w1}{p1}{year}{p2}",
        f"{w1.lower()}{n2}{p1}{w2}",
        f"{w1}{p1}{w2}{p2}{n2}",
        f"{leet}{p1}{n2}{w2.lower()}",
        f"{w1}({n2}){w2.lower()}{p2}",
        f"{w1[:4]}{p1}{w2[:4].lower()}{p2}{year % 100:02d}{p1}",
        _s(rng, _ALNUM, 6) + p1 + _s(rng, _ALNUM, 5) + p2 + _s(rng, _ALNUM, 4),
        f"{w1}{p1}{p2}{w2}{year}",
        f"{w2.upper()[:3]}{p1}{w1.lower()}{p2}{n2}*",
    ]
    pw = "".join(ch for ch in rng.choice(shapes) if ch not in avoid)
    return pw if len(pw) >= 8 else pw + _s(rng, _ALNUM, 8 - len(pw))


_PINYIN = [
    "zhangwei",
    "wangfang",
    "lina",
    "liuyang",
    "chenjing",
    "yangli",
    "zhaolei",
    "huangmin",
    "zhouqiang",
    "wuxia",
    "xuhui",
    "sunlei",
    "maxiaoyu",
    "linfeng",
    "hexin",
    "guoqing",
    "luoyan",
    "tangjie",
]
_CN_NAMES = [
    "张伟",
    "王芳",
    "李娜",
    "刘洋",
    "陈静",
    "杨磊",
    "赵敏",
    "黄强",
    "周杰",
    "吴霞",
    "徐辉",
    "孙磊",
    "马小雨",
    "林峰",
]


def _cn_pw(rng: random.Random, avoid: str = "") -> str:
    """A password the way many Chinese-speaking users pick one: pinyin, birthday, 520/1314, punctuation."""
    punct = [p for p in _PW_PUNCT if p not in avoid] or ["8"]
    py = rng.choice(_PINYIN)
    p1, p2 = rng.choice(punct), rng.choice(punct)
    y, m, d = rng.randint(1975, 2005), rng.randint(1, 12), rng.randint(1, 28)
    consonants = "".join(c for c in py if c not in "aeiou")[:4]
    shapes = [
        f"{py}{p1}{y}{m:02d}{d:02d}",
        f"{py.capitalize()}{p1}{m:02d}{d:02d}{p2}",
        f"woaini{rng.choice(['1314', '520', '5201314'])}{p1}{py[:3]}",
        f"{py[0].upper()}{py[1:5]}{p1}{rng.randint(100, 999)}{p2}qq",
        f"Wx{p1}{_s(rng, _DIG, 6)}{p2}",
        f"{consonants}{y}{p1}{p2}{consonants.upper()}",
        f"{py}{p1}{_s(rng, _ALNUM, 4)}{p2}{_s(rng, _DIG, 2)}",
        _pw(rng, avoid),
    ]
    pw = "".join(ch for ch in rng.choice(shapes) if ch not in avoid)
    return pw if len(pw) >= 8 else pw + _s(rng, _DIG, 8 - len(pw))


def _pw_q(rng: random.Random) -> str:
    """A password that can sit between double or single quotes."""
    return _pw(rng, avoid="'\"\\`")


def _pw_shell(rng: random.Random) -> str:
    """A password typed unquoted on a shell command line (people drop the risky characters)."""
    return _pw(rng, avoid=" ;&()*$#!?~^'\"\\`<>|")


# ---------------------------------------------------------------------------------------------------------------
# check digits


def _luhn(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + _s(rng, _DIG, length - len(prefix) - 1)
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str(-total % 10)


def _iban_from(country: str, bban: str) -> str:
    digits = "".join(str(int(ch, 36)) for ch in bban + country + "00")
    return f"{country}{98 - int(digits) % 97:02d}{bban}"


def _es_dc(ten: str) -> str:
    weights = [1, 2, 4, 8, 5, 10, 9, 7, 3, 6]
    d = 11 - sum(int(a) * w for a, w in zip(ten, weights, strict=True)) % 11
    return str({11: 0, 10: 1}.get(d, d))


def _iban(rng: random.Random) -> str:
    country = rng.choice(["DE", "GB", "NL", "FR", "BE", "AT", "ES"])
    if country == "DE":
        bban = _s(rng, _DIG, 18)
    elif country == "GB":
        bban = rng.choice(["NWBK", "BARC", "LOYD", "HBUK", "MIDL"]) + _s(rng, _DIG, 14)
    elif country == "NL":
        bban = rng.choice(["ABNA", "INGB", "RABO", "TRIO", "SNSB"]) + _s(rng, _DIG, 10)
    elif country == "FR":
        bank, branch, acct = _s(rng, _DIG, 5), _s(rng, _DIG, 5), _s(rng, _DIG, 11)
        key = 97 - (89 * int(bank) + 15 * int(branch) + 3 * int(acct)) % 97
        bban = f"{bank}{branch}{acct}{key:02d}"
    elif country == "BE":
        ten = rng.choice(["001", "035", "063", "068", "143", "310", "363", "735"]) + _s(rng, _DIG, 7)
        bban = f"{ten}{int(ten) % 97 or 97:02d}"
    elif country == "AT":
        bban = _s(rng, _DIG, 16)
    else:
        bank, branch, acct = _s(rng, _DIG, 4), _s(rng, _DIG, 4), _s(rng, _DIG, 10)
        bban = bank + branch + _es_dc("00" + bank + branch) + _es_dc(acct) + acct
    return _iban_from(country, bban)


_GB11643_W = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]


def _cn_id(rng: random.Random) -> str:
    area, earliest = rng.choice(
        [
            ("110105", 1962),
            ("110108", 1962),
            ("310104", 1962),
            ("310110", 1962),
            ("120103", 1962),
            ("440305", 1987),
            ("440106", 1987),
            ("330106", 1987),
            ("420111", 1987),
            ("320102", 1987),
            ("610113", 1987),
            ("370202", 1987),
            ("350203", 1987),
            ("430104", 1987),
            ("210102", 1987),
            ("510107", 1993),
            ("510105", 1993),
        ]
    )
    year = rng.randint(earliest, 2004)
    body = f"{area}{year}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(0, 999):03d}"
    return body + "10X98765432"[sum(int(a) * w for a, w in zip(body, _GB11643_W, strict=True)) % 11]


def _hkid(rng: random.Random) -> tuple[str, str]:
    letter = rng.choice("ACDEGHKPRVYZ")
    digits = _s(rng, _DIG, 6)
    total = 36 * 9 + (ord(letter) - 55) * 8 + sum(int(d) * w for d, w in zip(digits, range(7, 1, -1), strict=True))
    r = total % 11
    check = "0" if r == 0 else ("A" if r == 1 else str(11 - r))
    return letter + digits, check


_TW_LETTERS = {"A": 10, "B": 11, "E": 14, "F": 15, "H": 17, "D": 13}


def _twid(rng: random.Random) -> str:
    letter = rng.choice(sorted(_TW_LETTERS))
    n = _TW_LETTERS[letter]
    digits = rng.choice("12") + _s(rng, _DIG, 7)
    total = n // 10 + (n % 10) * 9 + sum(int(d) * w for d, w in zip(digits, range(8, 0, -1), strict=True))
    return f"{letter}{digits}{-total % 10}"


def _cpf(rng: random.Random) -> str:
    d = [rng.randint(0, 9) for _ in range(9)]
    for n in (10, 11):
        d.append(sum(x * w for x, w in zip(d, range(n, 1, -1), strict=False)) * 10 % 11 % 10)
    s = "".join(map(str, d))
    return f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}"


def _bsn(rng: random.Random) -> str:
    while True:
        d = [rng.randint(1, 9)] + [rng.randint(0, 9) for _ in range(7)]
        r = sum(x * w for x, w in zip(d, range(9, 1, -1), strict=True)) % 11
        if r <= 9:
            return "".join(map(str, d)) + str(r)


def _nir(rng: random.Random) -> str:
    dept = rng.choice(["75", "69", "13", "33", "59", "31", "44", "67"])
    body = f"{rng.choice('12')}{rng.randint(50, 99):02d}{rng.randint(1, 12):02d}{dept}{rng.randint(1, 400):03d}"
    body += f"{rng.randint(1, 999):03d}"
    key = 97 - int(body) % 97
    return f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key:02d}"


def _aba(rng: random.Random) -> str:
    d = [int(c) for c in f"{rng.choice([*range(1, 13), *range(21, 33)]):02d}" + _s(rng, _DIG, 6)]
    s = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5])
    return "".join(map(str, d)) + str(-s % 10)


def _ssn(rng: random.Random) -> str:
    area = rng.choice([n for n in range(1, 900) if n != 666][::7])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def _b58check(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n, out = int.from_bytes(data, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _b58(raw: bytes) -> str:
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = _B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


# ---------------------------------------------------------------------------------------------------------------
# BIP-39 word lists (official English and simplified-Chinese lists, in index order)

_BIP39_EN: list[str] = """
abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve acid
acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult advance advice
aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album alcohol alert alien all
alley allow almost alone alpha already also alter always amateur amazing among amount amused analyst anchor ancient
anger angle angry animal ankle announce annual another answer antenna antique anxiety any apart apology appear apple
approve april arch arctic area arena argue arm armed armor army around arrange arrest arrive arrow art artefact
artist artwork ask aspect assault asset assist assume asthma athlete atom attack attend attitude attract auction
audit august aunt author auto autumn average avocado avoid awake aware away awesome awful awkward axis baby bachelor
bacon badge bag balance balcony ball bamboo banana banner bar barely bargain barrel base basic basket battle beach
bean beauty because become beef before begin behave behind believe below belt bench benefit best betray better
between beyond bicycle bid bike bind biology bird birth bitter black blade blame blanket blast bleak bless blind
blood blossom blouse blue blur blush board boat body boil bomb bone bonus book boost border boring borrow boss
bottom bounce box boy bracket brain brand brass brave bread breeze brick bridge brief bright bring brisk broccoli
broken bronze broom brother brown brush bubble buddy budget buffalo build bulb bulk bullet bundle bunker burden
burger burst bus business busy butter buyer buzz cabbage cabin cable cactus cage cake call calm camera camp can
canal cancel candy cannon canoe canvas canyon capable capital captain car carbon card cargo carpet carry cart case
cash casino castle casual cat catalog catch category cattle caught cause caution cave ceiling celery cement census
century cereal certain chair chalk champion change chaos chapter charge chase chat cheap check cheese chef cherry
chest chicken chief child chimney choice choose chronic chuckle chunk churn cigar cinnamon circle citizen city civil
claim clap clarify claw clay clean clerk clever click client cliff climb clinic clip clock clog close cloth cloud
clown club clump cluster clutch coach coast coconut code coffee coil coin collect color column combine come comfort
comic common company concert conduct confirm congress connect consider control convince cook cool copper copy coral
core corn correct cost cotton couch country couple course cousin cover coyote crack cradle craft cram crane crash
crater crawl crazy cream credit creek crew cricket crime crisp critic crop cross crouch crowd crucial cruel cruise
crumble crunch crush cry crystal cube culture cup cupboard curious current curtain curve cushion custom cute cycle
dad damage damp dance danger daring dash daughter dawn day deal debate debris decade december decide decline
decorate decrease deer defense define defy degree delay deliver demand demise denial dentist deny depart depend
deposit depth deputy derive describe desert design desk despair destroy detail detect develop device devote diagram
dial diamond diary dice diesel diet differ digital dignity dilemma dinner dinosaur direct dirt disagree discover
disease dish dismiss disorder display distance divert divide divorce dizzy doctor document dog doll dolphin domain
donate donkey donor door dose double dove draft dragon drama drastic draw dream dress drift drill drink drip drive
drop drum dry duck dumb dune during dust dutch duty dwarf dynamic eager eagle early earn earth easily east easy echo
ecology economy edge edit educate effort egg eight either elbow elder electric elegant element elephant elevator
elite else embark embody embrace emerge emotion employ empower empty enable enact end endless endorse enemy energy
enforce engage engine enhance enjoy enlist enough enrich enroll ensure enter entire entry envelope episode equal
equip era erase erode erosion error erupt escape essay essence estate eternal ethics evidence evil evoke evolve
exact example excess exchange excite exclude excuse execute exercise exhaust exhibit exile exist exit exotic expand
expect expire explain expose express extend extra eye eyebrow fabric face faculty fade faint faith fall false fame
family famous fan fancy fantasy farm fashion fat fatal father fatigue fault favorite feature february federal fee
feed feel female fence festival fetch fever few fiber fiction field figure file film filter final find fine finger
finish fire firm first fiscal fish fit fitness fix flag flame flash flat flavor flee flight flip float flock floor
flower fluid flush fly foam focus fog foil fold follow food foot force forest forget fork fortune forum forward
fossil foster found fox fragile frame frequent fresh friend fringe frog front frost frown frozen fruit fuel fun
funny furnace fury future gadget gain galaxy gallery game gap garage garbage garden garlic garment gas gasp gate
gather gauge gaze general genius genre gentle genuine gesture ghost giant gift giggle ginger giraffe girl give glad
glance glare glass glide glimpse globe gloom glory glove glow glue goat goddess gold good goose gorilla gospel
gossip govern gown grab grace grain grant grape grass gravity great green grid grief grit grocery group grow grunt
guard guess guide guilt guitar gun gym habit hair half hammer hamster hand happy harbor hard harsh harvest hat have
hawk hazard head health heart heavy hedgehog height hello helmet help hen hero hidden high hill hint hip hire
history hobby hockey hold hole holiday hollow home honey hood hope horn horror horse hospital host hotel hour hover
hub huge human humble humor hundred hungry hunt hurdle hurry hurt husband hybrid ice icon idea identify idle ignore
ill illegal illness image imitate immense immune impact impose improve impulse inch include income increase index
indicate indoor industry infant inflict inform inhale inherit initial inject injury inmate inner innocent input
inquiry insane insect inside inspire install intact interest into invest invite involve iron island isolate issue
item ivory jacket jaguar jar jazz jealous jeans jelly jewel job join joke journey joy judge juice jump jungle junior
junk just kangaroo keen keep ketchup key kick kid kidney kind kingdom kiss kit kitchen kite kitten kiwi knee knife
knock know lab label labor ladder lady lake lamp language laptop large later latin laugh laundry lava law lawn
lawsuit layer lazy leader leaf learn leave lecture left leg legal legend leisure lemon lend length lens leopard
lesson letter level liar liberty library license life lift light like limb limit link lion liquid list little live
lizard load loan lobster local lock logic lonely long loop lottery loud lounge love loyal lucky luggage lumber lunar
lunch luxury lyrics machine mad magic magnet maid mail main major make mammal man manage mandate mango mansion
manual maple marble march margin marine market marriage mask mass master match material math matrix matter maximum
maze meadow mean measure meat mechanic medal media melody melt member memory mention menu mercy merge merit merry
mesh message metal method middle midnight milk million mimic mind minimum minor minute miracle mirror misery miss
mistake mix mixed mixture mobile model modify mom moment monitor monkey monster month moon moral more morning
mosquito mother motion motor mountain mouse move movie much muffin mule multiply muscle museum mushroom music must
mutual myself mystery myth naive name napkin narrow nasty nation nature near neck need negative neglect neither
nephew nerve nest net network neutral never news next nice night noble noise nominee noodle normal north nose
notable note nothing notice novel now nuclear number nurse nut oak obey object oblige obscure observe obtain obvious
occur ocean october odor off offer office often oil okay old olive olympic omit once one onion online only open
opera opinion oppose option orange orbit orchard order ordinary organ orient original orphan ostrich other outdoor
outer output outside oval oven over own owner oxygen oyster ozone pact paddle page pair palace palm panda panel
panic panther paper parade parent park parrot party pass patch path patient patrol pattern pause pave payment peace
peanut pear peasant pelican pen penalty pencil people pepper perfect permit person pet phone photo phrase physical
piano picnic picture piece pig pigeon pill pilot pink pioneer pipe pistol pitch pizza place planet plastic plate
play please pledge pluck plug plunge poem poet point polar pole police pond pony pool popular portion position
possible post potato pottery poverty powder power practice praise predict prefer prepare present pretty prevent
price pride primary print priority prison private prize problem process produce profit program project promote proof
property prosper protect proud provide public pudding pull pulp pulse pumpkin punch pupil puppy purchase purity
purpose purse push put puzzle pyramid quality quantum quarter question quick quit quiz quote rabbit raccoon race
rack radar radio rail rain raise rally ramp ranch random range rapid rare rate rather raven raw razor ready real
reason rebel rebuild recall receive recipe record recycle reduce reflect reform refuse region regret regular reject
relax release relief rely remain remember remind remove render renew rent reopen repair repeat replace report
require rescue resemble resist resource response result retire retreat return reunion reveal review reward rhythm
rib ribbon rice rich ride ridge rifle right rigid ring riot ripple risk ritual rival river road roast robot robust
rocket romance roof rookie room rose rotate rough round route royal rubber rude rug rule run runway rural sad saddle
sadness safe sail salad salmon salon salt salute same sample sand satisfy satoshi sauce sausage save say scale scan
scare scatter scene scheme school science scissors scorpion scout scrap screen script scrub sea search season seat
second secret section security seed seek segment select sell seminar senior sense sentence series service session
settle setup seven shadow shaft shallow share shed shell sheriff shield shift shine ship shiver shock shoe shoot
shop short shoulder shove shrimp shrug shuffle shy sibling sick side siege sight sign silent silk silly silver
similar simple since sing siren sister situate six size skate sketch ski skill skin skirt skull slab slam sleep
slender slice slide slight slim slogan slot slow slush small smart smile smoke smooth snack snake snap sniff snow
soap soccer social sock soda soft solar soldier solid solution solve someone song soon sorry sort soul sound soup
source south space spare spatial spawn speak special speed spell spend sphere spice spider spike spin spirit split
spoil sponsor spoon sport spot spray spread spring spy square squeeze squirrel stable stadium staff stage stairs
stamp stand start state stay steak steel stem step stereo stick still sting stock stomach stone stool story stove
strategy street strike strong struggle student stuff stumble style subject submit subway success such sudden suffer
sugar suggest suit summer sun sunny sunset super supply supreme sure surface surge surprise surround survey suspect
sustain swallow swamp swap swarm swear sweet swift swim swing switch sword symbol symptom syrup system table tackle
tag tail talent talk tank tape target task taste tattoo taxi teach team tell ten tenant tennis tent term test text
thank that theme then theory there they thing this thought three thrive throw thumb thunder ticket tide tiger tilt
timber time tiny tip tired tissue title toast tobacco today toddler toe together toilet token tomato tomorrow tone
tongue tonight tool tooth top topic topple torch tornado tortoise toss total tourist toward tower town toy track
trade traffic tragic train transfer trap trash travel tray treat tree trend trial tribe trick trigger trim trip
trophy trouble truck true truly trumpet trust truth try tube tuition tumble tuna tunnel turkey turn turtle twelve
twenty twice twin twist two type typical ugly umbrella unable unaware uncle uncover under undo unfair unfold unhappy
uniform unique unit universe unknown unlock until unusual unveil update upgrade uphold upon upper upset urban urge
usage use used useful useless usual utility vacant vacuum vague valid valley valve van vanish vapor various vast
vault vehicle velvet vendor venture venue verb verify version very vessel veteran viable vibrant vicious victory
video view village vintage violin virtual virus visa visit visual vital vivid vocal voice void volcano volume vote
voyage wage wagon wait walk wall walnut want warfare warm warrior wash wasp waste water wave way wealth weapon wear
weasel weather web wedding weekend weird welcome west wet whale what wheat wheel when where whip whisper wide width
wife wild will win window wine wing wink winner winter wire wisdom wise wish witness wolf woman wonder wood wool
word work world worry worth wrap wreck wrestle wrist write wrong yard year yellow you young youth zebra zero zone
zoo
""".split()

_BIP39_ZH: list[str] = list(
    """
的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种
面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本
去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比
或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总
次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做
必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权
收证改清美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马
节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断
深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候
毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严首底液
官德随病苏失尔死讲配女黄推显谈罪神艺呢席含企望密批营项防举球英氧势告李台落木帮轮破亚师围注远字材排供
河态封另施减树溶怎止案言士均武固叶鱼波视仅费紧爱左章早朝害续轻服试食充兵源判护司足某练差致板田降黑犯
负击范继兴似余坚曲输修故城夫够送笔船占右财吃富春职觉汉画功巴跟虽杂飞检吸助升阳互初创抗考投坏策古径换
未跑留钢曾端责站简述钱副尽帝射草冲承独令限阿宣环双请超微让控州良轴找否纪益依优顶础载倒房突坐粉敌略客
袁冷胜绝析块剂测丝协诉念陈仍罗盐友洋错苦夜刑移频逐靠混母短皮终聚汽村云哪既距卫停烈央察烧迅境若印洲刻
括激孔搞甚室待核校散侵吧甲游久菜味旧模湖货损预阻毫普稳乙妈植息扩银语挥酒守拿序纸医缺雨吗针刘啊急唱误
训愿审附获茶鲜粮斤孩脱硫肥善龙演父渐血欢械掌歌沙刚攻谓盾讨晚粒乱燃矛乎杀药宁鲁贵钟煤读班伯香介迫句丰
培握兰担弦蛋沉假穿执答乐谁顺烟缩征脸喜松脚困异免背星福买染井概慢怕磁倍祖皇促静补评翻肉践尼衣宽扬棉希
伤操垂秋宜氢套督振架亮末宪庆编牛触映雷销诗座居抓裂胞呼娘景威绿晶厚盟衡鸡孙延危胶屋乡临陆顾掉呀灯岁措
束耐剧玉赵跳哥季课凯胡额款绍卷齐伟蒸殖永宗苗川炉岩弱零杨奏沿露杆探滑镇饭浓航怀赶库夺伊灵税途灭赛归召
鼓播盘裁险康唯录菌纯借糖盖横符私努堂域枪润幅哈竟熟虫泽脑壤碳欧遍侧寨敢彻虑斜薄庭纳弹饲伸折麦湿暗荷瓦
塞床筑恶户访塔奇透梁刀旋迹卡氯遇份毒泥退洗摆灰彩卖耗夏择忙铜献硬予繁圈雪函亦抽篇阵阴丁尺追堆雄迎泛爸
楼避谋吨野猪旗累偏典馆索秦脂潮爷豆忽托惊塑遗愈朱替纤粗倾尚痛楚谢奋购磨君池旁碎骨监捕弟暴割贯殊释词亡
壁顿宝午尘闻揭炮残冬桥妇警综招吴付浮遭徐您摇谷赞箱隔订男吹园纷唐败宋玻巨耕坦荣闭湾键凡驻锅救恩剥凝碱
齿截炼麻纺禁废盛版缓净睛昌婚涉筒嘴插岸朗庄街藏姑贸腐奴啦惯乘伙恢匀纱扎辩耳彪臣亿璃抵脉秀萨俄网舞店喷
纵寸汗挂洪贺闪柬爆烯津稻墙软勇像滚厘蒙芳肯坡柱荡腿仪旅尾轧冰贡登黎削钻勒逃障氨郭峰币港伏轨亩毕擦莫刺
浪秘援株健售股岛甘泡睡童铸汤阀休汇舍牧绕炸哲磷绩朋淡尖启陷柴呈徒颜泪稍忘泵蓝拖洞授镜辛壮锋贫虚弯摩泰
幼廷尊窗纲弄隶疑氏宫姐震瑞怪尤琴循描膜违夹腰缘珠穷森枝竹沟催绳忆邦剩幸浆栏拥牙贮礼滤钠纹罢拍咱喊袖埃
勤罚焦潜伍墨欲缝姓刊饱仿奖铝鬼丽跨默挖链扫喝袋炭污幕诸弧励梅奶洁灾舟鉴苯讼抱毁懂寒智埔寄届跃渡挑丹艰
贝碰拔爹戴码梦芽熔赤渔哭敬颗奔铅仲虎稀妹乏珍申桌遵允隆螺仓魏锐晓氮兼隐碍赫拨忠肃缸牵抢博巧壳兄杜讯诚
碧祥柯页巡矩悲灌龄伦票寻桂铺圣恐恰郑趣抬荒腾贴柔滴猛阔辆妻填撤储签闹扰紫砂递戏吊陶伐喂疗瓶婆抚臂摸忍
虾蜡邻胸巩挤偶弃槽劲乳邓吉仁烂砖租乌舰伴瓜浅丙暂燥橡柳迷暖牌秧胆详簧踏瓷谱呆宾糊洛辉愤竞隙怒粘乃绪肩
籍敏涂熙皆侦悬掘享纠醒狂锁淀恨牲霸爬赏逆玩陵祝秒浙貌役彼悉鸭趋凤晨畜辈秩卵署梯炎滩棋驱筛峡冒啥寿译浸
泉帽迟硅疆贷漏稿冠嫩胁芯牢叛蚀奥鸣岭羊凭串塘绘酵融盆锡庙筹冻辅摄袭筋拒僚旱钾鸟漆沈眉疏添棒穗硝韩逼扭
侨凉挺碗栽炒杯患馏劝豪辽勃鸿旦吏拜狗埋辊掩饮搬骂辞勾扣估蒋绒雾丈朵姆拟宇辑陕雕偿蓄崇剪倡厅咬驶薯刷斥
番赋奉佛浇漫曼扇钙桃扶仔返俗亏腔鞋棱覆框悄叔撞骗勘旺沸孤吐孟渠屈疾妙惜仰狠胀谐抛霉桑岗嘛衰盗渗脏赖涌
甜曹阅肌哩厉烃纬毅昨伪症煮叹钉搭茎笼酷偷弓锥恒杰坑鼻翼纶叙狱逮罐络棚抑膨蔬寺骤穆冶枯册尸凸绅坯牺焰轰
欣晋瘦御锭锦丧旬锻垄搜扑邀亭酯迈舒脆酶闲忧酚顽羽涨卸仗陪辟惩杭姚肚捉飘漂昆欺吾郎烷汁呵饰萧雅邮迁燕撒
姻赴宴烦债帐斑铃旨醇董饼雏姿拌傅腹妥揉贤拆歪葡胺丢浩徽昂垫挡览贪慰缴汪慌冯诺姜谊凶劣诬耀昏躺盈骑乔溪
丛卢抹闷咨刮驾缆悟摘铒掷颇幻柄惠惨佳仇腊窝涤剑瞧堡泼葱罩霍捞胎苍滨俩捅湘砍霞邵萄疯淮遂熊粪烘宿档戈驳
嫂裕徙箭捐肠撑晒辨殿莲摊搅酱屏疫哀蔡堵沫皱畅叠阁莱敲辖钩痕坝巷饿祸丘玄溜曰逻彭尝卿妨艇吞韦怨矮歇
""".replace("\n", "")
)


def _mnemonic(rng: random.Random, words: list[str], n: int) -> list[str]:
    """A BIP-39 mnemonic with a valid checksum."""
    ent_bits = n * 11 * 32 // 33
    ent = rng.getrandbits(ent_bits).to_bytes(ent_bits // 8, "big")
    cs_bits = ent_bits // 32
    checksum = int.from_bytes(hashlib.sha256(ent).digest(), "big") >> (256 - cs_bits)
    total = (int.from_bytes(ent, "big") << cs_bits) | checksum
    return [words[(total >> (11 * (n - 1 - i))) & 0x7FF] for i in range(n)]


# ---------------------------------------------------------------------------------------------------------------
# key material


def _ssh_str(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def _openssh_lines(rng: random.Random) -> list[str]:
    pub = rng.randbytes(32)
    comment = rng.choice([b"anna@laptop", b"deploy@ci-runner", b"jdoe@MacBook-Pro.local", b"root@bastion", b""])
    check = rng.randbytes(4)
    key_type = _ssh_str(b"ssh-ed25519")
    priv = check + check + key_type + _ssh_str(pub) + _ssh_str(rng.randbytes(32) + pub) + _ssh_str(comment)
    if len(priv) % 8:
        priv += bytes(range(1, 8 - len(priv) % 8 + 1))
    blob = (
        b"openssh-key-v1\0"
        + _ssh_str(b"none")
        + _ssh_str(b"none")
        + _ssh_str(b"")
        + (1).to_bytes(4, "big")
        + _ssh_str(key_type + _ssh_str(pub))
        + _ssh_str(priv)
    )
    text = base64.b64encode(blob).decode()
    return [text[i : i + 70] for i in range(0, len(text), 70)]


_PEM_SHAPES = [
    # (label, body prefix, total base64 length)
    ("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 1592),
    ("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA", 1588),
    ("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1624),
    ("PRIVATE KEY", "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", 1624),
    ("EC PRIVATE KEY", "MHcCAQEEI", 164),
    ("PRIVATE KEY", "MC4CAQAwBQYDK2VwBCIEI", 64),
    ("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 1744),
    ("DSA PRIVATE KEY", "MIIBuwIBAAKBgQD", 596),
]


def _pem(rng: random.Random, label: str | None = None) -> tuple[str, list[str]]:
    shapes = [s for s in _PEM_SHAPES if label is None or s[0] == label]
    lab, prefix, total = rng.choice(shapes)
    pad = "==" if total % 4 == 0 and rng.random() < 0.3 else ""
    body = prefix + _s(rng, _B64, total - len(prefix) - len(pad)) + pad
    return lab, [body[i : i + 64] for i in range(0, len(body), 64)]


# ---------------------------------------------------------------------------------------------------------------
# vendor tokens


def _jwt(rng: random.Random, payload: dict | None = None) -> str:
    alg = rng.choice(["HS256", "RS256", "ES256"])
    header = {"alg": alg, "typ": "JWT"}
    if rng.random() < 0.4:
        header["kid"] = _s(rng, _B64URL, 22)
    now = rng.randint(1_700_000_000, 1_745_000_000)
    if payload is None:
        payload = {
            "sub": rng.choice([str(rng.randint(10**5, 10**9)), _uuid(rng)]),
            "name": rng.choice(["Anna Kowalski", "jdoe", "ci-bot", "Ravi Iyer", "Mia Tanaka"]),
            "role": rng.choice(["admin", "user", "service", "editor"]),
            "iat": now,
            "exp": now + 3600 * rng.choice([1, 24, 168, 720, 8760]),
        }
    sig_len = {"HS256": 43, "RS256": 342, "ES256": 86}[alg]
    dumps = json.dumps(header, separators=(",", ":")).encode(), json.dumps(payload, separators=(",", ":")).encode()
    return f"{_b64u(dumps[0])}.{_b64u(dumps[1])}.{_s(rng, _B64URL, sig_len)}"


_SMALL_VENDORS: list[tuple[str, str, Callable[[random.Random], str]]] = [
    ("Linear", "LINEAR_API_KEY", lambda r: "lin_api_" + _s(r, _ALNUM, 40)),
    ("Notion", "NOTION_TOKEN", lambda r: "ntn_" + _s(r, _DIG, 11) + _s(r, _ALNUM, 35)),
    ("Figma", "FIGMA_TOKEN", lambda r: "figd_" + _s(r, _B64URL, 40)),
    ("Postman", "POSTMAN_API_KEY", lambda r: "PMAK-" + _s(r, _HEX, 24) + "-" + _s(r, _HEX, 34)),
    ("Pulumi", "PULUMI_ACCESS_TOKEN", lambda r: "pul-" + _s(r, _HEX, 40)),
    ("Tailscale", "TS_AUTHKEY", lambda r: "tskey-auth-k" + _s(r, _ALNUM, 11) + "CNTRL-" + _s(r, _ALNUM, 33)),
    ("Netlify", "NETLIFY_AUTH_TOKEN", lambda r: "nfp_" + _s(r, _ALNUM, 36)),
    ("Doppler", "DOPPLER_TOKEN", lambda r: "dp.st.prd." + _s(r, _ALNUM, 43)),
    ("Grafana Cloud", "GRAFANA_SA_TOKEN", lambda r: "glsa_" + _s(r, _ALNUM, 32) + "_" + _s(r, _HEX, 8)),
    ("New Relic", "NEW_RELIC_API_KEY", lambda r: "NRAK-" + _s(r, _UP + _DIG, 27)),
    ("PlanetScale", "PLANETSCALE_PASSWORD", lambda r: "pscale_pw_" + _s(r, _B64URL, 43)),
    ("Sentry", "SENTRY_AUTH_TOKEN", lambda r: "sntryu_" + _s(r, _HEX, 64)),
    ("Shopify", "SHOPIFY_ADMIN_TOKEN", lambda r: "shpat_" + _s(r, _HEX, 32)),
    ("DigitalOcean", "DIGITALOCEAN_TOKEN", lambda r: "dop_v1_" + _s(r, _HEX, 64)),
    ("Databricks", "DATABRICKS_TOKEN", lambda r: "dapi" + _s(r, _HEX, 32)),
    ("Buildkite", "BUILDKITE_API_TOKEN", lambda r: "bkua_" + _s(r, _HEX, 40)),
    ("Render", "RENDER_API_KEY", lambda r: "rnd_" + _s(r, _ALNUM, 32)),
    ("Pinecone", "PINECONE_API_KEY", lambda r: "pcsk_" + _s(r, _ALNUM, 6) + "_" + _s(r, _ALNUM, 63)),
    ("Terraform Cloud", "TFE_TOKEN", lambda r: _s(r, _ALNUM, 14) + ".atlasv1." + _s(r, _ALNUM, 67)),
    ("Jira", "JIRA_API_TOKEN", lambda r: "ATATT3xFfGF0" + _s(r, _B64URL, 170) + "=" + _s(r, "0123456789ABCDEF", 8)),
    ("Mapbox", "MAPBOX_SECRET_TOKEN", lambda r: "sk.eyJ1Ijoi" + _s(r, _B64URL, 60) + "." + _s(r, _B64URL, 22)),
    ("Okta", "OKTA_API_TOKEN", lambda r: "00" + _s(r, _B64URL, 40)),
    ("Fly.io", "FLY_API_TOKEN", lambda r: "fo1_" + _s(r, _B64URL, 43)),
    ("Cloudflare", "CLOUDFLARE_API_TOKEN", lambda r: _s(r, _B64URL, 40)),
    ("Algolia", "ALGOLIA_ADMIN_KEY", lambda r: _s(r, _HEX, 32)),
    ("Airtable", "AIRTABLE_PAT", lambda r: "pat" + _s(r, _ALNUM, 14) + "." + _s(r, _HEX, 64)),
    ("Cohere", "CO_API_KEY", lambda r: _s(r, _ALNUM, 40)),
    ("ElevenLabs", "ELEVENLABS_API_KEY", lambda r: "sk_" + _s(r, _HEX, 48)),
    ("Heroku", "HEROKU_API_KEY", lambda r: "HRKU-AA" + _s(r, _B64URL, 58)),
    ("Mailchimp", "MAILCHIMP_API_KEY", lambda r: _s(r, _HEX, 32) + "-us" + str(r.randint(1, 21))),
]


def _any_token(rng: random.Random) -> str:
    roll = rng.randrange(6)
    if roll == 0:
        return "ghp_" + _s(rng, _ALNUM, 36)
    if roll == 1:
        return "sk-proj-" + _s(rng, _B64URL, 124) + "T3BlbkFJ" + _s(rng, _B64URL, 24)
    if roll == 2:
        return "xoxb-" + _digits(rng, 12) + "-" + _digits(rng, 13) + "-" + _s(rng, _ALNUM, 24)
    if roll == 3:
        return _s(rng, _HEX, 64)
    if roll == 4:
        return "sk-ant-api03-" + _s(rng, _B64URL, 93) + "AA"
    return rng.choice(_SMALL_VENDORS)[2](rng)


# ===============================================================================================================
# English kinds: vendor tokens


@_kind("stripe_live_key")
def _stripe(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        key = "sk_live_" + _s(rng, _ALNUM, rng.choice([24, 99]))
    elif roll == 1:
        key = "rk_live_51" + _s(rng, _ALNUM, 97)
    elif roll == 2:
        key = "whsec_" + _s(rng, _ALNUM, 32)
    else:
        key = "sk_live_51" + _s(rng, _UP + _DIG, 12) + _s(rng, _ALNUM, 85)
    text = rng.choice(
        [
            f"Stripe prod key for the billing worker: {key} (the test one is in 1Password).",
            f"STRIPE_SECRET_KEY={key}",
            f'stripe:\n  secret_key: "{key}"\n  currency: eur',
            f"- [x] moved the Stripe key `{key}` out of settings.py\n- [ ] rotate it after launch",
            f"> note to self: webhook signing secret is {key}; endpoint is /hooks/stripe",
            f'stripe.api_key = "{key}"  # TODO env var',
        ]
    )
    return key, text


@_kind("git_remote_with_token")
def _git_remote(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(5)
    if roll == 0:
        tok = "ghp_" + _s(rng, _ALNUM, 36)
    elif roll == 1:
        tok = "github_pat_11" + _s(rng, _UP + _DIG, 20) + "_" + _s(rng, _ALNUM, 59)
    elif roll == 2:
        tok = "glpat-" + _s(rng, _B64URL, 20)
    elif roll == 3:
        tok = "gho_" + _s(rng, _ALNUM, 36)
    else:
        tok = "ghs_" + _s(rng, _ALNUM, 36)
    org = rng.choice(["acme-labs", "kestrel-io", "mybooks", "hnguyen", "orchard-hq"])
    repo = rng.choice(["infra", "agent-memory", "site", "dotfiles", "billing-api"])
    host = "gitlab.com" if tok.startswith("glpat") else "github.com"
    user = rng.choice(["x-access-token", "oauth2", "deploy-bot", org])
    url = f"https://{user}:{tok}@{host}/{org}/{repo}.git"
    text = rng.choice(
        [
            f"git remote set-url origin {url}",
            f"git clone {url}",
            f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*',
            f"Pushed with `git push {url} HEAD:main` because the SSH agent was not running.",
            f"~/.git-credentials:\nhttps://{org}:{tok}@{host}",
            f"pip install git+https://{tok}@{host}/{org}/{repo}.git@v1.4.0",
        ]
    )
    return tok, text


@_kind("slack_bot_token")
def _slack_token(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        tok = f"xoxb-{_digits(rng, 12)}-{_digits(rng, 13)}-{_s(rng, _ALNUM, 24)}"
    else:
        tok = f"xoxp-{_digits(rng, 12)}-{_digits(rng, 12)}-{_digits(rng, 13)}-{_s(rng, _HEX, 32)}"
    text = rng.choice(
        [
            f"Slack bot (#alerts) token: {tok}",
            f"SLACK_BOT_TOKEN={tok}",
            f'slack:\n  token: "{tok}"\n  channel: "#deploys"',
            f"Agent: I stored your Slack user token ({tok}) so I can post standups for you.",
            f'client = WebClient(token="{tok}")',
        ]
    )
    return tok, text


@_kind("slack_webhook_url")
def _slack_webhook(rng: random.Random) -> tuple[str, str]:
    url = (
        f"https://hooks.slack.com/services/T{_s(rng, _UP + _DIG, rng.choice([8, 10]))}"
        f"/B{_s(rng, _UP + _DIG, rng.choice([8, 10]))}/{_s(rng, _ALNUM, 24)}"
    )
    text = rng.choice(
        [
            f"Incoming webhook for #oncall: {url}",
            f"SLACK_WEBHOOK_URL={url}",
            f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy done\"}}' {url}",
            f'alertmanager:\n  receivers:\n    - name: slack\n      slack_configs:\n        - api_url: "{url}"',
        ]
    )
    return url, text


@_kind("aws_credentials_file")
def _aws(rng: random.Random) -> tuple[str, str]:
    key_id = rng.choice(["AKIA", "ASIA"]) + _s(rng, _UP + "234567", 16)
    secret = _s(rng, _ALNUM + "+/", 40)
    profile = rng.choice(["default", "prod", "personal", "terraform"])
    text = rng.choice(
        [
            f"[{profile}]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\nregion = eu-west-1",
            f"export AWS_ACCESS_KEY_ID={key_id}\nexport AWS_SECRET_ACCESS_KEY={secret}",
            f"AWS creds for the backup bucket: {key_id} / {secret}",
            f"aws configure set aws_secret_access_key {secret} --profile {profile}",
            f'{{"AccessKeyId": "{key_id}", "SecretAccessKey": "{secret}", "Region": "us-east-1"}}',
        ]
    )
    return secret, _fence(rng, text, "ini")


@_kind("llm_api_key")
def _llm(rng: random.Random) -> tuple[str, str]:
    vendor, var, key = rng.choice(
        [
            ("OpenAI", "OPENAI_API_KEY", "sk-proj-" + _s(rng, _B64URL, 124) + "T3BlbkFJ" + _s(rng, _B64URL, 24)),
            ("OpenAI", "OPENAI_API_KEY", "sk-" + _s(rng, _ALNUM, 20) + "T3BlbkFJ" + _s(rng, _ALNUM, 20)),
            ("Anthropic", "ANTHROPIC_API_KEY", "sk-ant-api03-" + _s(rng, _B64URL, 93) + "AA"),
            ("Groq", "GROQ_API_KEY", "gsk_" + _s(rng, _ALNUM, 52)),
            ("Replicate", "REPLICATE_API_TOKEN", "r8_" + _s(rng, _ALNUM, 37)),
            ("Hugging Face", "HF_TOKEN", "hf_" + _s(rng, _LO + _UP, 34)),
            ("OpenRouter", "OPENROUTER_API_KEY", "sk-or-v1-" + _s(rng, _HEX, 64)),
            ("Google AI Studio", "GEMINI_API_KEY", "AIza" + _s(rng, _B64URL, 35)),
            ("Perplexity", "PERPLEXITY_API_KEY", "pplx-" + _s(rng, _ALNUM, 48)),
            ("xAI", "XAI_API_KEY", "xai-" + _s(rng, _ALNUM, 80)),
        ]
    )
    text = rng.choice(
        [
            f"User: here's my {vendor} key, use it for the summarizer: {key}",
            f"{var}={key}",
            f"Remember: the {vendor} key for side projects is {key} (billing cap $20).",
            f'client = {vendor.split()[0]}(api_key="{key}")',
            f"export {var}='{key}'",
            f"- {vendor}: `{key}`",
        ]
    )
    return key, text


@_kind("small_vendor_token")
def _small_vendor(rng: random.Random) -> tuple[str, str]:
    vendor, var, make = rng.choice(_SMALL_VENDORS)
    tok = make(rng)
    text = rng.choice(
        [
            f"{vendor} token for the agent: {tok}",
            f"{var}={tok}",
            f"export {var}='{tok}'",
            f"- {vendor}: `{tok}` (read-only, expires in 90 days)",
            f'"{var.lower()}": "{tok}",',
            f"set -Ux {var} {tok}",
            f"Fact: {vendor} API token = {tok}",
        ]
    )
    return tok, text


@_kind("prefixless_internal_token")
def _prefixless(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice(
        [
            _s(rng, _HEX, rng.choice([32, 40, 64])),
            _s(rng, _ALNUM, rng.randint(24, 48)),
            _s(rng, _B64URL, rng.randint(30, 44)),
            _s(rng, _LODIG, 8) + "-" + _s(rng, _LODIG, 8) + "-" + _s(rng, _LODIG, 8),
            base64.b64encode(rng.randbytes(rng.choice([24, 32, 48]))).decode(),
        ]
    )
    word = rng.choice(["key", "token", "api key", "access token", "secret", "shared secret", "signing key", "HMAC key"])
    svc = rng.choice(["the inventory service", "our internal gateway", "the license server", "metrics-relay"])
    text = rng.choice(
        [
            f"The {word} for {svc} is {tok}",
            f"{svc} {word}: {tok}",
            f"{word}={tok}",
            f"Use {word} {tok} when calling {svc}.",
            f"X-Internal-Token: {tok}",
            f"Asked Priya for the {word} to {svc}; she sent `{tok}`.",
            f"{word.upper().replace(' ', '_')}: '{tok}'",
        ]
    )
    return tok, text


@_kind("telegram_bot_token")
def _telegram(rng: random.Random) -> tuple[str, str]:
    tok = f"{rng.randint(100_000_000, 7_999_999_999)}:AA{_s(rng, _B64URL, 33)}"
    text = rng.choice(
        [
            f"BotFather gave me: {tok}",
            f"TELEGRAM_BOT_TOKEN={tok}",
            f"curl https://api.telegram.org/bot{tok}/getUpdates",
            f"bot = telebot.TeleBot('{tok}')",
            f"@home_alerts_bot token — {tok}",
        ]
    )
    return tok, text


@_kind("discord_webhook")
def _discord(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.6:
        secret = f"https://discord.com/api/webhooks/{_digits(rng, 19)}/{_s(rng, _B64URL, 68)}"
        text = rng.choice(
            [
                f"Discord webhook (#builds): {secret}",
                f"DISCORD_WEBHOOK={secret}",
                f"notify:\n  discord: {secret}",
            ]
        )
    else:
        secret = f"{_s(rng, 'MNO', 1)}{_s(rng, _ALNUM, 25)}.{_s(rng, _B64URL, 6)}.{_s(rng, _B64URL, 38)}"
        text = rng.choice([f"Discord bot token: {secret}", f"client.run('{secret}')", f"DISCORD_TOKEN={secret}"])
    return secret, text


@_kind("sendgrid_mailgun_key")
def _mail_api(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        key = f"SG.{_s(rng, _B64URL, 22)}.{_s(rng, _B64URL, 43)}"
        text = rng.choice(
            [
                f"SENDGRID_API_KEY={key}",
                f"[smtp.sendgrid.net]:587 apikey:{key}",
                f"SendGrid key for transactional mail: {key}",
            ]
        )
    elif roll == 1:
        key = "key-" + _s(rng, _HEX, 32)
        text = rng.choice(
            [
                f"MAILGUN_API_KEY={key}",
                f"curl -s --user 'api:{key}' https://api.mailgun.net/v3/mg.example.org/messages",
            ]
        )
    else:
        key = _uuid(rng)
        text = rng.choice([f"Postmark server token: {key}", f"POSTMARK_SERVER_TOKEN={key}"])
    return key, text


@_kind("vault_token_terraform")
def _vault(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice(["hvs.CAESI" + _s(rng, _B64URL, 86), "hvs." + _s(rng, _ALNUM, 24), "s." + _s(rng, _ALNUM, 24)])
    text = rng.choice(
        [
            f'provider "vault" {{\n  address = "https://vault.service.consul:8200"\n  token   = "{tok}"\n}}',
            f"export VAULT_TOKEN={tok}",
            f"vault login {tok}",
            f"Root token after unseal: {tok}",
            f'vault:\n  addr: https://vault.example.net\n  token: "{tok}"',
        ]
    )
    return tok, _fence(rng, text, "hcl")


@_kind("google_api_key")
def _gapi(rng: random.Random) -> tuple[str, str]:
    key = "AIza" + _s(rng, _B64URL, 35)
    text = rng.choice(
        [
            f"Maps key (unrestricted!!): {key}",
            f'const firebaseConfig = {{\n  apiKey: "{key}",\n  authDomain: "notes-app.firebaseapp.com",\n}};',
            f'<script src="https://maps.googleapis.com/maps/api/js?key={key}&callback=initMap"></script>',
            f"YOUTUBE_API_KEY={key}",
        ]
    )
    return key, text


@_kind("twilio_auth_token")
def _twilio(rng: random.Random) -> tuple[str, str]:
    sid, tok = "AC" + _s(rng, _HEX, 32), _s(rng, _HEX, 32)
    text = rng.choice(
        [
            f"Twilio\n  Account SID: {sid}\n  Auth token: {tok}",
            f"TWILIO_ACCOUNT_SID={sid}\nTWILIO_AUTH_TOKEN={tok}",
            f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json -u {sid}:{tok}",
            f"client = Client('{sid}', '{tok}')",
        ]
    )
    return tok, text


@_kind("jwt_bearer")
def _jwt_kind(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.25:
        now = rng.randint(1_690_000_000, 1_740_000_000)
        ref = _s(rng, _LO, 20)
        payload = {"iss": "supabase", "ref": ref, "role": "service_role", "iat": now, "exp": now + 10**9 // 3}
        tok = _jwt(rng, payload)
        text = rng.choice([f"SUPABASE_SERVICE_ROLE_KEY={tok}", f"supabase service_role key: {tok}"])
        return tok, text
    tok = _jwt(rng)
    text = rng.choice(
        [
            f'curl -H "Authorization: Bearer {tok}" https://api.internal.example/v1/me',
            f"GET /v2/orders HTTP/1.1\nHost: api.shop.example\nAuthorization: Bearer {tok}\nAccept: */*",
            f"access_token from devtools (valid for a week): {tok}",
            f"Cookie: session={tok}; theme=dark",
            f'headers = {{"Authorization": "Bearer {tok}"}}',
        ]
    )
    return tok, text


@_kind("basic_auth_header")
def _basic(rng: random.Random) -> tuple[str, str]:
    user = rng.choice(["admin", "jenkins", "grafana", "anna", "svc-metrics"])
    cred = base64.b64encode(f"{user}:{_pw(rng, avoid=':')}".encode()).decode()
    text = rng.choice(
        [
            f"Authorization: Basic {cred}",
            f'curl -H "Authorization: Basic {cred}" https://ci.example.org/job/build/api/json',
            f'proxy_set_header Authorization "Basic {cred}";',
            f"The scraper sends `Authorization: Basic {cred}` to the exporter.",
        ]
    )
    return cred, text


# ===============================================================================================================
# English kinds: config syntaxes


def _env_value(rng: random.Random, pw: str) -> str:
    if rng.random() < 0.5 or any(c in pw for c in " #$'\"`\\"):
        return f"'{pw}'" if "'" not in pw else f'"{pw}"'
    return pw


@_kind("dotenv_block")
def _dotenv(rng: random.Random) -> tuple[str, str]:
    pw = _pw_q(rng)
    var = rng.choice(["DB_PASSWORD", "POSTGRES_PASSWORD", "ADMIN_PASSWORD", "SMTP_PASS", "LDAP_BIND_PW"])
    line = f"{var}={_env_value(rng, pw)}"
    if rng.random() < 0.3:
        line = "export " + line
    if rng.random() < 0.3:
        line += "  # rotated " + rng.choice(["2024-05", "in March", "after the incident"])
    text = "\n".join(
        [
            "# .env.production",
            "NODE_ENV=production",
            f"PORT={rng.choice([3000, 8000, 8080])}",
            "DB_HOST=db.internal",
            line,
            "LOG_LEVEL=info",
        ]
    )
    return pw, _fence(rng, text, "dotenv")


@_kind("yaml_config_password")
def _yaml_pw(rng: random.Random) -> tuple[str, str]:
    pw = _pw_q(rng)
    quoted = rng.choice([f'"{pw}"', f"'{pw}'"]) if not pw[0].isalnum() or rng.random() < 0.6 else pw
    key = rng.choice(["password", "pass", "passwd", "db_password", "admin_password"])
    text = rng.choice(
        [
            f"database:\n  host: db.internal.acme.net\n  port: 5432\n  username: app_rw\n  {key}: {quoted}",
            f"primary: &db\n  user: app\n  password: &db_pw {quoted}\nreplica:\n  <<: *db\n  password: *db_pw",
            f"ldap:\n  bind_dn: cn=svc,dc=corp,dc=local\n  bind_password: {quoted}\n  url: ldaps://ldap.corp.local",
            f"prometheus:\n  basic_auth:\n    username: scraper\n    {key}: {quoted}",
            f"- name: set admin pw\n  user:\n    name: admin\n"
            f"    password: \"{{{{ '{pw}' | password_hash('sha512') }}}}\"",
        ]
    )
    return pw, _fence(rng, text, "yaml")


@_kind("json_config_password")
def _json_pw(rng: random.Random) -> tuple[str, str]:
    pw = _pw_q(rng)
    key = rng.choice(["password", "pass", "smtpPassword", "adminPassword", "db_pass"])
    obj = (
        {
            "smtp": {"host": "smtp.fastmail.com", "port": 465, "user": "alerts@example.org", key: pw},
        }
        if rng.random() < 0.5
        else {"name": "sync-job", "source": {"type": "postgres", "user": "etl", key: pw}}
    )
    text = json.dumps(obj, indent=rng.choice([None, 2, 4]))
    return pw, _fence(rng, text, "json")


@_kind("toml_ini_password")
def _toml_ini(rng: random.Random) -> tuple[str, str]:
    pw = _pw_q(rng)
    text = rng.choice(
        [
            f'[database]\nhost = "10.0.0.12"\nuser = "app"\npassword = \'{pw}\'',
            f"~/.my.cnf\n[client]\nuser=root\npassword={pw}\nhost=127.0.0.1",
            f"[options]\nadmin_passwd = {pw}\ndb_host = localhost\ndb_user = odoo",
            f"[inet_http_server]\nport=127.0.0.1:9001\nusername=admin\npassword={pw}",
            f'[tool.poetry.http-basic.private]\nusername = "ci"\npassword = "{pw}"',
            f"[mail]\nsmtp_server = smtp.office365.com\nsmtp_user = me@example.org\nsmtp_password = {pw}",
        ]
    )
    return pw, _fence(rng, text, "toml")


@_kind("xml_config_password")
def _xml(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'\"\\`;")
    esc = _xml_escape(pw)
    text = rng.choice(
        [
            f"<server>\n  <id>nexus-releases</id>\n  <username>deploy</username>\n"
            f"  <password>{esc}</password>\n</server>",
            f'<add name="Default" connectionString="Server=sql01;Database=Crm;User Id=sa;Password={esc};" />',
            f'<packageSourceCredentials>\n  <feed>\n    <add key="Username" value="ci" />\n'
            f'    <add key="ClearTextPassword" value="{esc}" />\n  </feed>\n</packageSourceCredentials>',
            f'<user username="admin" password="{esc}" roles="manager-gui,admin-gui"/>',
            f"<DataSource>\n  <User>report</User>\n  <Password>{esc}</Password>\n</DataSource>",
        ]
    )
    return esc, _fence(rng, text, "xml")


@_kind("java_properties_password")
def _props(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="\\")
    esc = pw.replace("=", "\\=").replace(":", "\\:")
    key = rng.choice(
        [
            "spring.datasource.password",
            "db.password",
            "mail.smtp.password",
            "ldap.manager.password",
            "ossrhPassword",
            "signing.password",
            "keystore.password",
        ]
    )
    sep = rng.choice(["=", " = ", ": ", ":"])
    text = f"# application-prod.properties\nspring.datasource.url=jdbc:postgresql://db:5432/app\n{key}{sep}{esc}"
    if rng.random() < 0.3:
        text = f"~/.gradle/gradle.properties\nossrhUsername=jdoe\n{key}{sep}{esc}\norg.gradle.jvmargs=-Xmx2g"
    return esc, _fence(rng, text, "properties")


@_kind("terraform_hcl_password")
def _hcl(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'\"\\`$%")
    text = rng.choice(
        [
            f'variable "db_password" {{\n  type      = string\n  default   = "{pw}"\n  sensitive = true\n}}',
            f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  username = "dbadmin"\n'
            f'  password = "{pw}"\n}}',
            f'# terraform.tfvars\nregion      = "eu-central-1"\ndb_password = "{pw}"',
            f'provider "postgresql" {{\n  host     = "10.1.0.5"\n  username = "postgres"\n  password = "{pw}"\n}}',
        ]
    )
    return pw, _fence(rng, text, "hcl")


@_kind("docker_compose_environment")
def _compose(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'\"\\`$# ")
    var = rng.choice(["POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "MONGO_INITDB_ROOT_PASSWORD", "RABBITMQ_PASS"])
    if rng.random() < 0.5:
        env = f"    environment:\n      - {var}={pw}\n      - TZ=Europe/Berlin"
    else:
        env = f'    environment:\n      {var}: "{pw}"\n      TZ: Europe/Berlin'
    text = f'services:\n  db:\n    image: postgres:16\n{env}\n    ports:\n      - "5432:5432"'
    return pw, _fence(rng, text, "yaml")


@_kind("github_actions_literal")
def _gha(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        secret = "npm_" + _s(rng, _ALNUM, 36)
        body = f"    env:\n      NPM_TOKEN: {secret}  # TODO move to secrets\n    steps:\n      - run: npm publish"
    elif roll == 1:
        secret = _pw_q(rng)
        body = (
            "    steps:\n      - uses: docker/login-action@v3\n        with:\n"
            "          registry: registry.example.net\n"
            f"          username: ci\n          password: '{secret}'"
        )
    else:
        secret = "ghp_" + _s(rng, _ALNUM, 36)
        body = (
            f'    steps:\n      - run: |\n          curl -H "Authorization: token {secret}" https://api.github.com/user'
        )
    text = f"name: release\non: [push]\njobs:\n  publish:\n    runs-on: ubuntu-latest\n{body}"
    return secret, _fence(rng, text, "yaml")


@_kind("systemd_environment")
def _systemd(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'\"\\`% ")
    var = rng.choice(["DB_PASS", "API_TOKEN", "MQTT_PASSWORD", "RESTIC_PASSWORD"])
    line = rng.choice(
        [
            f'Environment="{var}={pw}"',
            f"Environment={var}={pw}",
            f'Environment="LOG_LEVEL=info" "{var}={pw}"',
        ]
    )
    text = f"[Service]\nUser=agent\n{line}\nExecStart=/usr/local/bin/agent --serve\nRestart=on-failure"
    return pw, _fence(rng, text, "ini")


@_kind("helm_values_password")
def _helm(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'\"\\`,= ")
    text = rng.choice(
        [
            f'postgresql:\n  auth:\n    username: app\n    postgresPassword: "{pw}"\n    database: app',
            f"redis:\n  auth:\n    enabled: true\n    password: '{pw}'\n  master:\n    persistence:\n      size: 8Gi",
            f"helm upgrade --install grafana grafana/grafana -n monitoring --set adminPassword='{pw}'",
            f"helm install pg bitnami/postgresql --set auth.postgresPassword={pw} --set primary.persistence.size=20Gi",
            f'keycloak:\n  auth:\n    adminUser: admin\n    adminPassword: "{pw}"',
        ]
    )
    return pw, _fence(rng, text, "yaml")


# ===============================================================================================================
# English kinds: connection strings


@_kind("jdbc_url_password")
def _jdbc(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        pw = _pw(rng, avoid="&=?#/ %+;:'\"")
        url = f"jdbc:postgresql://10.20.0.7:5432/orders?user=svc_orders&password={pw}&ssl=true"
    elif roll == 1:
        pw = _pw(rng, avoid="@/:?#% '\"")
        url = f"jdbc:mysql://report:{pw}@mysql-prod.internal:3306/analytics?useSSL=true"
    elif roll == 2:
        pw = _pw(rng, avoid="{}'\" ")
        url = f"jdbc:sqlserver://sql01.corp.local:1433;databaseName=crm;user=sa;password={{{pw}}};encrypt=true"
    else:
        pw = _pw(rng, avoid="@/()'\" ")
        url = f"jdbc:oracle:thin:scott/{pw}@//db.corp.local:1521/ORCLPDB1"
    text = rng.choice([url, f"spring.datasource.url={url}", f"DBeaver connection for prod: {url}"])
    return pw, text


@_kind("odbc_connection_string")
def _odbc(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="{}'\"")
    shown = f"{{{pw}}}" if ";" in pw or rng.random() < 0.4 else pw
    text = rng.choice(
        [
            f"Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:sql-prod.database.windows.net,1433;Database=crm;"
            f"Uid=crm_admin;Pwd={shown};Encrypt=yes;",
            f"Driver={{PostgreSQL Unicode}};Server=10.4.0.20;Port=5432;Database=ledger;Uid=ledger;Pwd={shown};",
            f"Provider=MSOLEDBSQL;Data Source=sql01;Initial Catalog=Sales;User ID=sa;Password={shown};",
            f'conn = pyodbc.connect("DSN=warehouse;UID=etl;PWD={shown}")',
        ]
    )
    return pw, text


@_kind("mongodb_uri")
def _mongo(rng: random.Random) -> tuple[str, str]:
    enc = quote(_pw(rng), safe="")
    uri = rng.choice(
        [
            f"mongodb+srv://app_user:{enc}@cluster0.{_s(rng, _LODIG, 5)}.mongodb.net/?retryWrites=true&w=majority",
            f"mongodb://admin:{enc}@10.0.0.11:27017,10.0.0.12:27017/?replicaSet=rs0&authSource=admin",
        ]
    )
    text = rng.choice([uri, f"MONGO_URL={uri}", f'mongosh "{uri}"', f"Atlas connection string: {uri}"])
    return enc, text


@_kind("amqp_uri")
def _amqp(rng: random.Random) -> tuple[str, str]:
    enc = quote(_pw(rng), safe="")
    uri = rng.choice(
        [
            f"amqp://orders:{enc}@rabbitmq.internal:5672/%2Fprod",
            f"amqps://svc:{enc}@b-{_uuid(rng)}.mq.us-east-1.amazonaws.com:5671",
        ]
    )
    text = rng.choice([uri, f"CELERY_BROKER_URL={uri}", f"broker_url = '{uri}'"])
    return enc, text


@_kind("redis_uri")
def _redis(rng: random.Random) -> tuple[str, str]:
    enc = quote(_pw(rng), safe="")
    uri = rng.choice(
        [
            f"redis://:{enc}@10.0.2.15:6379/0",
            f"rediss://default:{enc}@redis-{_digits(rng, 5)}.c1.us-east-1-2.ec2.cloud.redislabs.com:{_digits(rng, 5)}",
            f"redis://cache:{enc}@redis.internal:6380/2",
        ]
    )
    text = rng.choice([uri, f"REDIS_URL={uri}", f"Sidekiq uses {uri}"])
    return enc, text


@_kind("smtp_credentials")
def _smtp(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        secret = " ".join(_s(rng, _LO, 4) for _ in range(4))
        text = rng.choice(
            [
                f"Gmail app password for the alert mailer: {secret}",
                f"EMAIL_HOST = 'smtp.gmail.com'\nEMAIL_HOST_USER = 'me@gmail.com'\nEMAIL_HOST_PASSWORD = '{secret}'",
            ]
        )
    elif roll == 1:
        secret = quote(_pw(rng), safe="")
        text = f"SMTP_URL=smtp://alerts%40example.org:{secret}@smtp.fastmail.com:587"
    elif roll == 2:
        secret = _pw(rng, avoid=" '\"\\")
        text = (
            "~/.msmtprc\naccount default\nhost smtp.migadu.com\nport 465\ntls on\nauth on\n"
            f"user me@example.org\npassword {secret}"
        )
    else:
        secret = _pw_q(rng)
        text = f'smtp:\n  host: smtp.office365.com\n  port: 587\n  user: noreply@example.org\n  password: "{secret}"'
    return secret, text


@_kind("netrc_entry")
def _netrc(rng: random.Random) -> tuple[str, str]:
    secret = rng.choice(
        [
            _pw(rng, avoid=" '\"\\#"),
            "HRKU-AA" + _s(rng, _B64URL, 58),
            "ghp_" + _s(rng, _ALNUM, 36),
            _uuid(rng),
        ]
    )
    text = rng.choice(
        [
            f"machine api.heroku.com\n  login anna@example.org\n  password {secret}",
            f"machine ftp.example.org login backup password {secret}",
            f"~/.netrc:\nmachine github.com\nlogin jdoe\npassword {secret}\n\nmachine example.com\nlogin anonymous",
        ]
    )
    return secret, text


@_kind("pgpass_line")
def _pgpass(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="\\")
    esc = pw.replace(":", "\\:")
    host = rng.choice(["db.internal", "10.0.4.21", "localhost", "pg-replica.corp.local"])
    line = f"{host}:5432:{rng.choice(['*', 'app', 'analytics'])}:{rng.choice(['report_ro', 'postgres', 'app'])}:{esc}"
    text = rng.choice([line, f"~/.pgpass (chmod 600):\n{line}", f"added to .pgpass:\n```\n{line}\n```"])
    return esc, text


@_kind("npmrc_auth")
def _npmrc(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        secret = "npm_" + _s(rng, _ALNUM, 36)
        text = f"//registry.npmjs.org/:_authToken={secret}"
    elif roll == 1:
        secret = "ghp_" + _s(rng, _ALNUM, 36)
        text = f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={secret}"
    elif roll == 2:
        secret = base64.b64encode(_pw(rng).encode()).decode()
        text = f"//nexus.corp.local/repository/npm/:username=ci\n//nexus.corp.local/repository/npm/:_password={secret}"
    else:
        secret = base64.b64encode(f"deploy:{_pw(rng)}".encode()).decode()
        text = f"registry=https://artifactory.example.net/api/npm/npm/\n_auth={secret}\nalways-auth=true"
    return secret, _fence(rng, f"# ~/.npmrc\n{text}", "ini")


@_kind("pypirc_password")
def _pypirc(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.7:
        secret = "pypi-AgEIcHlwaS5vcmc" + _s(rng, _B64URL, rng.randint(140, 200))
        text = f"[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = {secret}"
        if rng.random() < 0.3:
            text = f"twine upload -u __token__ -p {secret} dist/*"
    else:
        secret = _pw(rng, avoid=" '\"\\")
        text = f"[private]\nrepository = https://pypi.corp.local/\nusername = jdoe\npassword = {secret}"
    return secret, _fence(rng, text, "ini")


@_kind("credentials_in_url")
def _cred_url(rng: random.Random) -> tuple[str, str]:
    enc = quote(_pw(rng), safe="")
    user = rng.choice(["deploy", "jdoe", "svc-build", "anna"])
    text = rng.choice(
        [
            f"[global]\nindex-url = https://{user}:{enc}@nexus.corp.local/repository/pypi/simple",
            f"export https_proxy=http://{user}:{enc}@proxy.corp.local:3128",
            f"Grafana kiosk URL: https://admin:{enc}@grafana.home.lan/d/abc/overview?kiosk",
            f"rsync -av backup/ ftp://{user}:{enc}@nas.local/backups/",
            f"git clone https://{user}:{enc}@git.corp.local/platform/infra.git",
        ]
    )
    return enc, text


@_kind("k8s_secret_manifest")
def _k8s(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng)
    if rng.random() < 0.6:
        secret = base64.b64encode(pw.encode()).decode()
        data = f"data:\n  username: {base64.b64encode(b'app').decode()}\n  password: {secret}"
    else:
        secret = pw.replace("'", "")
        data = f"stringData:\n  username: app\n  password: '{secret}'"
    text = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: prod\ntype: Opaque\n{data}"
    return secret, _fence(rng, text, "yaml")


@_kind("azure_storage_key")
def _azure(rng: random.Random) -> tuple[str, str]:
    account = rng.choice(["acmeprodlogs", "notesbackup01", "kestrelstatic", "mlartifacts"])
    if rng.random() < 0.6:
        secret = _s(rng, _B64, 86) + "=="
        conn = (
            f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey={secret};EndpointSuffix=core.windows.net"
        )
        text = rng.choice([conn, f'AZURE_STORAGE_CONNECTION_STRING="{conn}"', f"Blob conn string: {conn}"])
    else:
        secret = quote(_s(rng, _B64, 43) + "=", safe="")
        text = (
            f"SAS URL: https://{account}.blob.core.windows.net/exports?sv=2022-11-02&ss=b&srt=sco&sp=rwdlac"
            f"&se=2026-01-01T00:00:00Z&st=2024-01-01T00:00:00Z&spr=https&sig={secret}"
        )
    return secret, text


# ===============================================================================================================
# English kinds: command lines


@_kind("cli_mysql_password")
def _mysql(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        pw = _pw_shell(rng)
        text = rng.choice([f"mysql -uroot -p{pw} shop", f"mysql -h 10.0.3.12 -u app -p{pw} -e 'show processlist'"])
    else:
        pw = _pw(rng, avoid="'")
        text = rng.choice(
            [
                f"mysql -h 10.0.3.12 -u root -p'{pw}' shop",
                f"mysqldump -u backup --password='{pw}' --all-databases > /srv/backup/all.sql",
                f"mysqladmin -u root -p'{pw}' status",
            ]
        )
    return pw, _fence(rng, text, "bash")


@_kind("cli_sshpass")
def _sshpass(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'")
    text = rng.choice(
        [
            f"sshpass -p '{pw}' ssh -o StrictHostKeyChecking=no root@10.1.1.20",
            f"sshpass -p '{pw}' scp backup.tar.gz deploy@192.168.50.4:/srv/",
            f"sshpass -p '{pw}' rsync -av ./site/ www@web01.internal:/var/www/",
        ]
    )
    return pw, _fence(rng, text, "bash")


@_kind("cli_docker_login")
def _docker(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        secret = _pw(rng, avoid="'")
        text = f"docker login -u admin -p '{secret}' registry.corp.local:5000"
    elif roll == 1:
        secret = "ghp_" + _s(rng, _ALNUM, 36)
        text = f"echo {secret} | docker login ghcr.io -u jdoe --password-stdin"
    elif roll == 2:
        secret = "dckr_pat_" + _s(rng, _B64URL, 27)
        text = f"docker login -u jdoe --password {secret}"
    else:
        secret = _pw(rng, avoid="'")
        text = f"podman login quay.io --username kestrel+ci --password '{secret}'"
    return secret, _fence(rng, text, "bash")


@_kind("cli_curl_user")
def _curl(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        pw = _pw_shell(rng)
        text = f"curl -u admin:{pw} https://jenkins.internal:8443/api/json"
    elif roll == 1:
        pw = _pw(rng, avoid='"\\`$')
        text = f'curl --user "ci-bot:{pw}" -X POST https://nexus.example.net/service/rest/v1/components'
    elif roll == 2:
        pw = _pw(rng, avoid="'")
        text = f"curl -sk -u 'elastic:{pw}' https://10.0.5.9:9200/_cat/indices"
    else:
        pw = _pw(rng, avoid="'")
        text = f"wget --user=anna --password='{pw}' https://files.example.org/private/report.pdf"
    return pw, _fence(rng, text, "bash")


@_kind("cli_htpasswd")
def _htpasswd(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'")
    text = rng.choice(
        [
            f"htpasswd -b -c /etc/nginx/.htpasswd admin '{pw}'",
            f"htpasswd -bB /etc/apache2/.htpasswd grafana '{pw}'",
            f"sudo htpasswd -b /etc/squid/passwords anna '{pw}'",
        ]
    )
    return pw, text


@_kind("cli_openssl_pass")
def _openssl(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        pw = _pw_shell(rng)
        shown = f"pass:{pw}"
    else:
        pw = _pw(rng, avoid="'")
        shown = f"'pass:{pw}'"
    text = rng.choice(
        [
            f"openssl rsa -in server.key -out server.nopass.key -passin {shown}",
            f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout {shown}",
            f"openssl enc -aes-256-cbc -pbkdf2 -salt -in backup.tar -out backup.tar.enc -pass {shown}",
            f"openssl pkcs12 -in client.p12 -nodes -passin {shown} | less",
        ]
    )
    return pw, _fence(rng, text, "bash")


@_kind("cli_other_password_flags")
def _cli_misc(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="'%")
    shell = _pw_shell(rng)
    secret, text = rng.choice(
        [
            (pw, f"PGPASSWORD='{pw}' psql -h 10.0.4.21 -U postgres -d app"),
            (pw, f"redis-cli -h 10.0.0.5 -a '{pw}' --no-auth-warning info"),
            (pw, f"ldapsearch -x -H ldaps://ldap.corp.local -D 'cn=admin,dc=corp,dc=local' -w '{pw}' -b dc=corp"),
            (pw, f"smbclient //nas/share -U 'anna%{pw}'"),
            (shell, f"7z x backup-2024.7z -p{shell}"),
            (shell, f"zip -P {shell} -r taxes.zip taxes/"),
            (shell, f"keytool -importcert -alias corp-ca -file ca.crt -keystore truststore.jks -storepass {shell}"),
            (pw, f"az login -u anna@example.org -p '{pw}'"),
            (shell, f"net use Z: \\\\fs01\\share {shell} /user:CORP\\anna"),
            (pw, f"mongosh --host 10.0.0.11 -u admin -p '{pw}' --authenticationDatabase admin"),
            (shell, f"unrar x -p{shell} photos.rar"),
        ]
    )
    return secret, _fence(rng, text, "bash")


@_kind("shell_history_export")
def _history(rng: random.Random) -> tuple[str, str]:
    tok = _any_token(rng)
    var = rng.choice(["GITHUB_TOKEN", "API_KEY", "OPENAI_API_KEY", "SLACK_TOKEN", "SERVICE_TOKEN"])
    n = rng.randint(200, 1900)
    text = rng.choice(
        [
            f"  {n}  cd ~/src/agent\n  {n + 1}  export {var}={tok}\n  {n + 2}  python run.py --once",
            f"$ export {var}={tok}\n$ ./deploy.sh staging\ndeploying... ok",
            f'PS C:\\Users\\anna> $env:{var} = "{tok}"\nPS C:\\Users\\anna> npm run release',
            f"set {var}={tok}\ncall build.cmd",
        ]
    )
    return tok, _fence(rng, text, "console")


# ===============================================================================================================
# English kinds: private keys and key files


@_kind("openssh_private_key")
def _openssh(rng: random.Random) -> tuple[str, str]:
    lines = _openssh_lines(rng)
    sep = "\r\n" if rng.random() < 0.15 else "\n"
    body = sep.join(lines)
    block = f"-----BEGIN OPENSSH PRIVATE KEY-----{sep}{body}{sep}-----END OPENSSH PRIVATE KEY-----"
    text = rng.choice(
        [
            f"Backup of my laptop key (~/.ssh/id_ed25519), in case the disk dies:\n```\n{block}\n```",
            f"deploy key for the CI runner:\n{block}",
            f"cat > ~/.ssh/id_ed25519 <<'EOF'\n{block}\nEOF\nchmod 600 ~/.ssh/id_ed25519",
        ]
    )
    return body, text


@_kind("pem_private_key")
def _pem_kind(rng: random.Random) -> tuple[str, str]:
    label, lines = _pem(rng)
    roll = rng.randrange(6)
    if roll == 0:
        body = "\n".join(lines)
        text = f"```\n-----BEGIN {label}-----\n{body}\n-----END {label}-----\n```"
    elif roll == 1:
        body = "\n    ".join(lines)
        text = (
            f"tls:\n  cert: /etc/ssl/site.crt\n  key: |\n"
            f"    -----BEGIN {label}-----\n    {body}\n    -----END {label}-----"
        )
    elif roll == 2:
        body = "\\n".join(lines)
        text = f'JWT_PRIVATE_KEY="-----BEGIN {label}-----\\n{body}\\n-----END {label}-----\\n"'
    elif roll == 3:
        body = "".join(lines)
        text = rng.choice([f"SIGNING_KEY={body}", f"private key (header stripped): {body}"])
    elif roll == 4:
        _, lines = _pem(rng, "RSA PRIVATE KEY")
        body = "\n".join(lines)
        dek = _s(rng, "0123456789ABCDEF", 32)
        text = (
            f"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,{dek}\n\n"
            f"{body}\n-----END RSA PRIVATE KEY-----"
        )
    else:
        body = "\n".join(lines)
        text = (
            f'resource "tls_self_signed_cert" "ca" {{\n  private_key_pem = <<EOT\n'
            f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\nEOT\n}}"
        )
    return body, text


@_kind("gcp_service_account_key")
def _gcp(rng: random.Random) -> tuple[str, str]:
    _, lines = _pem(rng, "PRIVATE KEY")
    body = "\\n".join(lines)
    project = rng.choice(["notes-prod-4412", "acme-analytics", "kestrel-ml-221"])
    sa = rng.choice(["uploader", "terraform", "bq-reader"])
    text = (
        "{\n"
        '  "type": "service_account",\n'
        f'  "project_id": "{project}",\n'
        f'  "private_key_id": "{_s(rng, _HEX, 40)}",\n'
        f'  "private_key": "-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\n",\n'
        f'  "client_email": "{sa}@{project}.iam.gserviceaccount.com",\n'
        f'  "client_id": "{_digits(rng, 21)}",\n'
        '  "token_uri": "https://oauth2.googleapis.com/token"\n'
        "}"
    )
    return body, text


@_kind("pgp_private_key")
def _pgp(rng: random.Random) -> tuple[str, str]:
    n = rng.randint(6, 26)
    raw = rng.choice(["lQdGBG", "lQWGBG", "lFgEZ", "lIYEZ"]) + _s(rng, _B64, 64 * n - 6)
    lines = [raw[i : i + 64] for i in range(0, len(raw), 64)]
    body = "\n".join(lines)
    text = (
        f"Exported with `gpg --export-secret-keys --armor anna@example.org`:\n\n"
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n={_s(rng, _B64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    return body, text


@_kind("putty_private_key")
def _ppk(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        pub = "AAAAC3NzaC1lZDI1NTE5AAAAI" + _s(rng, _B64, 43)
        priv_lines = ["AAAAI" + _s(rng, _B64, 43)]
        head, pub_lines = "ssh-ed25519", [pub]
    else:
        raw = "AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + _s(rng, _B64, 342)
        pub_lines = [raw[i : i + 64] for i in range(0, len(raw), 64)]
        praw = "AAABAQ" + _s(rng, _B64, 886)
        priv_lines = [praw[i : i + 64] for i in range(0, len(praw), 64)]
        head = "ssh-rsa"
    body = "\n".join(priv_lines)
    text = (
        f"PuTTY-User-Key-File-3: {head}\nEncryption: none\nComment: {head}-key-2024{rng.randint(1000, 1231)}\n"
        f"Public-Lines: {len(pub_lines)}\n" + "\n".join(pub_lines) + f"\nPrivate-Lines: {len(priv_lines)}\n{body}\n"
        f"Private-MAC: {_s(rng, _HEX, 64)}"
    )
    return body, text


@_kind("age_wireguard_nostr_key")
def _small_keys(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        secret = "AGE-SECRET-KEY-1" + _s(rng, _BECH32, 58).upper()
        text = (
            f"# created: 2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:11:12+01:00\n"
            f"# public key: age1{_s(rng, _BECH32, 58)}\n{secret}"
        )
    elif roll == 1:
        secret = base64.b64encode(rng.randbytes(32)).decode()
        text = (
            f"[Interface]\nPrivateKey = {secret}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n[Peer]\n"
            f"PublicKey = {base64.b64encode(rng.randbytes(32)).decode()}\nEndpoint = vpn.example.net:51820\n"
            "AllowedIPs = 0.0.0.0/0"
        )
    else:
        secret = "nsec1" + _s(rng, _BECH32, 58)
        text = rng.choice([f"nostr login: {secret}", f"My Nostr secret key (Damus export): {secret}"])
    return secret, _fence(rng, text)


@_kind("kubeconfig_credentials")
def _kubeconfig(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.6:
        label, lines = _pem(rng, rng.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY"]))
        pem_text = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"
        secret = base64.b64encode(pem_text.encode()).decode()
        cert = base64.b64encode(("-----BEGIN CERTIFICATE-----\nMIIC" + _s(rng, _B64, 60) + "\n").encode()).decode()
        user = f"    client-certificate-data: {cert}\n    client-key-data: {secret}"
    else:
        secret = _jwt(rng)
        user = f"    token: {secret}"
    text = "apiVersion: v1\nkind: Config\ncurrent-context: prod\nusers:\n- name: admin@prod\n  user:\n" + user
    return secret, _fence(rng, text, "yaml")


# ===============================================================================================================
# English kinds: codes, passwords in prose, odd containers


@_kind("otp_code")
def _otp(rng: random.Random) -> tuple[str, str]:
    code = _s(rng, _DIG, rng.choice([6, 6, 6, 8]))
    shown = f"{code[:3]} {code[3:]}" if len(code) == 6 and rng.random() < 0.25 else code
    text = rng.choice(
        [
            f"Your Acme verification code is {shown}. It expires in 10 minutes.",
            f"User: the 2FA code it just sent is {shown}, quick, log in for me",
            f"G-{shown} is your Google verification code.",
            f"Agent: I entered the one-time code {shown} on the bank site.",
            f"[SMS 09:41] {shown} is your login code. Don't share it.",
        ]
    )
    return shown, text


@_kind("recovery_codes")
def _recovery(rng: random.Random) -> tuple[str, str]:
    style = rng.randrange(3)
    if style == 0:
        codes = [f"{_s(rng, _LODIG, 5)}-{_s(rng, _LODIG, 5)}" for _ in range(16)]
        head = "GitHub recovery codes (github-recovery-codes.txt):"
    elif style == 1:
        codes = [f"{_s(rng, _DIG, 4)} {_s(rng, _DIG, 4)}" for _ in range(10)]
        head = "Google backup codes — each works once:"
    else:
        codes = [f"{_s(rng, _LODIG, 4)}-{_s(rng, _LODIG, 4)}" for _ in range(10)]
        head = "Discord backup codes:"
    bullet = rng.choice(["", "- ", "* "])
    text = head + "\n" + "\n".join(bullet + c for c in codes)
    return rng.choice(codes), _fence(rng, text)


@_kind("totp_secret")
def _totp(rng: random.Random) -> tuple[str, str]:
    raw = _s(rng, _B32, rng.choice([16, 32]))
    issuer = rng.choice(["GitHub", "AWS", "Proton", "Bitwarden", "Cloudflare"])
    if rng.random() < 0.5:
        secret = raw
        text = f"otpauth://totp/{issuer}:anna%40example.org?secret={raw}&issuer={issuer}&digits=6&period=30"
    else:
        secret = " ".join(raw[i : i + 4] for i in range(0, len(raw), 4)).lower()
        text = f"{issuer} 2FA setup key (couldn't scan the QR): {secret}"
    return secret, text


@_kind("door_locker_code")
def _door(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(5)
    if roll == 0:
        secret = f"#{_s(rng, _DIG, 6)}"
        text = f"Building front door: key in {secret} then wait for the buzz"
    elif roll == 1:
        secret = f"{rng.randint(0, 39):02d}-{rng.randint(0, 39):02d}-{rng.randint(0, 39):02d}"
        text = f"Gym locker 112, combo {secret}"
    elif roll == 2:
        secret = " ".join(_s(rng, _DIG, 6))
        text = f"Key box at the cabin (left of the porch light): {secret}"
    elif roll == 3:
        secret = _s(rng, _DIG, 4) + "*" + _s(rng, _DIG, 3)
        text = f"Garage keypad code is {secret}, then press the up arrow"
    else:
        secret = _s(rng, _DIG, 6) + "#"
        text = f"Office alarm disarm: {secret} (Mon–Fri only)"
    return secret, text


@_kind("safe_combination")
def _safe(rng: random.Random) -> tuple[str, str]:
    a, b, c = (rng.randint(0, 99) for _ in range(3))
    secret, text = rng.choice(
        [
            (f"R {a:02d} – L {b:02d} – R {c:02d}", f"Safe under the desk: R {a:02d} – L {b:02d} – R {c:02d}"),
            (f"{a:02d}-{b:02d}-{c:02d}", f"Sentry safe combo {a:02d}-{b:02d}-{c:02d} (turn right 4x first)"),
            (f"{a:02d}{b:02d}{c:02d}", f"Hotel room safe set to {a:02d}{b:02d}{c:02d}"),
            (f"right {a}, left {b}, right {c}", f"Dad's gun safe: right {a}, left {b}, right {c}."),
        ]
    )
    return secret, text


@_kind("wifi_credentials")
def _wifi(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice(
        [
            _pw(rng, avoid=';,:\\"'),
            f"{rng.choice(_PW_WORDS)} {rng.choice(_PW_WORDS).lower()} {rng.randint(10, 99)}!",
            _s(rng, _LODIG, 12),
        ]
    )
    ssid = rng.choice(["Lakeview-5G", "Hendersons", "FRITZ!Box 7590 XQ", "TP-Link_8F2A", "NETGEAR42", "Casa Ruiz"])
    text = rng.choice(
        [
            f"Wi-Fi at the cabin: SSID `{ssid}`, password `{pw}`",
            f"WIFI:T:WPA;S:{ssid};P:{pw};;",
            f'nmcli dev wifi connect "{ssid}" password "{pw}"',
            f'network={{\n    ssid="{ssid}"\n    psk="{pw}"\n}}',
            f"Guest wifi is {ssid} / {pw}",
        ]
    )
    return pw, text


_PHRASE_WORDS = [
    "purple",
    "walrus",
    "eats",
    "noodles",
    "canyon",
    "jelly",
    "lantern",
    "quietly",
    "orbit",
    "marble",
    "thunder",
    "pickle",
    "velvet",
    "harbor",
    "sixteen",
    "copper",
    "meadow",
    "dancing",
    "glacier",
    "mustard",
    "pilot",
    "saffron",
]


@_kind("passphrase_with_spaces")
def _passphrase(rng: random.Random) -> tuple[str, str]:
    words = rng.sample(_PHRASE_WORDS, rng.randint(4, 6))
    if rng.random() < 0.5:
        words.insert(rng.randint(1, len(words)), str(rng.randint(7, 1999)))
    phrase = " ".join(words)
    if rng.random() < 0.4:
        phrase = phrase.capitalize() + rng.choice(["!", ".", "?!", " &"])
    text = rng.choice(
        [
            f"ssh key passphrase: {phrase}",
            f"Bitwarden master password = '{phrase}'",
            f"LUKS passphrase for the backup disk is: {phrase}",
            f'GPG passphrase (do not lose): "{phrase}"',
            f"The phrase for the VeraCrypt volume is “{phrase}”",
        ]
    )
    return phrase, text


@_kind("password_in_prose")
def _prose(rng: random.Random) -> tuple[str, str]:
    pw = _pw(rng, avoid="`'\"[]()«»*<>")
    svc = rng.choice(["the staging admin", "the NAS web UI", "Netflix", "the router", "Jenkins", "my old Gmail"])
    text = rng.choice(
        [
            f"Login for {svc} is admin / `{pw}`",
            f"pw for {svc}: «{pw}»",
            f"{svc.capitalize()} password ({pw}) — changed from the default last week",
            f"Reminder: {svc} → user anna, pass **{pw}**",
            f"User: remember that my password for {svc} is {pw}\nAssistant: Noted, I'll remember that.",
            f"{svc}: [{pw}]",
            f"Told Sam the password for {svc}: “{pw}”.",
            f"passwd: <{pw}>",
            f"{svc} creds → anna.k / {pw}",
        ]
    )
    return pw, text


@_kind("markdown_table_credentials")
def _md_table(rng: random.Random) -> tuple[str, str]:
    rows = [
        ("Grafana", "http://10.0.3.8:3000", "admin"),
        ("Router", "192.168.1.1", "admin"),
        ("Synology", "https://nas.lan:5001", "anna"),
        ("Jenkins", "https://ci.corp.local", "deploy"),
        ("pfSense", "https://10.0.0.1", "root"),
    ]
    chosen = rng.sample(rows, 3)
    pws = [_pw(rng, avoid="|`") for _ in chosen]
    tick = rng.random() < 0.5
    lines = ["| Service | URL | User | Password |", "|---|---|---|---|"]
    for (name, url, user), pw in zip(chosen, pws, strict=True):
        lines.append(f"| {name} | {url} | {user} | {f'`{pw}`' if tick else pw} |")
    return rng.choice(pws), "\n".join(lines)


@_kind("json_escaped_secret")
def _json_escaped(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        secret = _pw_q(rng)
        inner = json.dumps({"db": {"user": "app", "password": secret}})
        text = json.dumps({"role": "user", "content": f"here is my config: {inner}"})
    elif roll == 1:
        secret = _any_token(rng)
        args = json.dumps({"command": f'export API_KEY="{secret}" && ./sync.sh'})
        text = json.dumps({"type": "tool_use", "name": "bash", "arguments": args})
    else:
        secret = _pw_q(rng)
        text = (
            f'{{"ts": "2024-06-02T10:15:00Z", "level": "debug", "msg": "login payload", '
            f'"body": "{{\\"username\\":\\"anna\\",\\"password\\":\\"{secret}\\"}}"}}'
        )
    return secret, text


@_kind("token_split_lines")
def _split(rng: random.Random) -> tuple[str, str]:
    tok = _any_token(rng)
    cut = rng.randint(len(tok) // 3, 2 * len(tok) // 3)
    a, b = tok[:cut], tok[cut:]
    roll = rng.randrange(5)
    if roll == 0:
        secret = f"{a}\\\n{b}"
        text = f'export API_TOKEN="{secret}"'
    elif roll == 1:
        secret = f"{a}\n{b}"
        text = f"Here's the token for the staging bot, sorry the chat wraps it:\n{secret}\nthanks!"
    elif roll == 2:
        secret = f"{a}\n    {b}"
        text = f"auth:\n  token: >-\n    {secret}"
    elif roll == 3:
        secret = f'{a}"\n    "{b}'
        text = f'API_KEY = (\n    "{secret}"\n)'
    else:
        secret = f'{a}" +\n  "{b}'
        text = f'const key = "{secret}";'
    return secret, text


# ===============================================================================================================
# English kinds: crypto wallets


@_kind("bip39_seed_english")
def _bip39_en(rng: random.Random) -> tuple[str, str]:
    words = _mnemonic(rng, _BIP39_EN, rng.choice([12, 12, 15, 18, 24]))
    style = rng.randrange(4)
    if style == 0:
        phrase = " ".join(words)
    elif style == 1:
        phrase = "\n".join(f"{i}. {w}" for i, w in enumerate(words, 1))
    elif style == 2:
        phrase = ", ".join(words)
    else:
        rows = range(0, len(words), 3)
        phrase = "\n".join("   ".join(f"{i + j + 1}) {words[i + j]}" for j in range(3)) for i in rows)
    text = rng.choice(
        [
            f"Seed phrase for the Ledger (write it on paper!):\n{phrase}",
            f"MetaMask secret recovery phrase: {phrase}",
            f"wallet backup\n```\n{phrase}\n```",
            f"User: keep this safe for me — {phrase}",
        ]
    )
    return phrase, text


@_kind("eth_private_key")
def _eth(rng: random.Random) -> tuple[str, str]:
    raw = _s(rng, _HEX, 64)
    key = rng.choice([raw, "0x" + raw, raw.upper() if rng.random() < 0.2 else "0x" + raw])
    addr = "0x" + _s(rng, _HEX, 40)
    text = rng.choice(
        [
            f"MetaMask account 2 ({addr}) private key: {key}",
            f"PRIVATE_KEY={key}",
            f'networks: {{\n  sepolia: {{\n    url: "https://rpc.sepolia.org",\n    accounts: ["{key}"],\n  }},\n}}',
            f"cast send {addr} --value 0.1ether --private-key {key}",
        ]
    )
    return key, text


@_kind("btc_wif_xprv")
def _btc(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    key = rng.randbytes(32)
    if roll == 0:
        secret = _b58check(b"\x80" + key + b"\x01")
        text = rng.choice([f"Electrum import: p2wpkh:{secret}", f"paper wallet WIF: {secret}"])
    elif roll == 1:
        secret = _b58check(b"\x80" + key)
        text = f"old 2013 paper wallet, private key {secret} (uncompressed)"
    else:
        payload = b"\x04\x88\xad\xe4" + b"\x00" * 9 + rng.randbytes(32) + b"\x00" + key
        secret = _b58check(payload)
        text = f"Sparrow wallet master key (xprv): {secret}"
    return secret, text


@_kind("solana_secret_key")
def _solana(rng: random.Random) -> tuple[str, str]:
    raw = rng.randbytes(64)
    if rng.random() < 0.5:
        secret = "[" + ",".join(str(b) for b in raw) + "]"
        text = f"~/.config/solana/id.json:\n{secret}"
    else:
        secret = _b58(raw)
        text = f"Phantom export (private key): {secret}"
    return secret, text


# ===============================================================================================================
# English kinds: personal data


@_kind("credit_card")
def _card(rng: random.Random) -> tuple[str, str]:
    brand, prefix, length, groups = rng.choice(
        [
            ("Visa", "4", 16, [4, 4, 4, 4]),
            ("Mastercard", str(rng.randint(51, 55)), 16, [4, 4, 4, 4]),
            ("Mastercard", str(rng.randint(2221, 2720)), 16, [4, 4, 4, 4]),
            ("Amex", rng.choice(["34", "37"]), 15, [4, 6, 5]),
            ("Discover", "6011", 16, [4, 4, 4, 4]),
            ("JCB", str(rng.randint(3528, 3589)), 16, [4, 4, 4, 4]),
        ]
    )
    num = _luhn(rng, prefix, length)
    shown = rng.choice([_group(num, groups), _group(num, groups, "-"), num])
    cvv = _s(rng, _DIG, 4 if brand == "Amex" else 3)
    exp = f"{rng.randint(1, 12):02d}/{rng.randint(25, 31)}"
    text = rng.choice(
        [
            f"{brand} for subscriptions: {shown}, exp {exp}, CVV {cvv}",
            f"card: {shown}\nexp: {exp}\ncvc: {cvv}",
            f"User: pay the invoice with my {brand} {shown} ({exp})",
            f"- company card ({brand}) `{shown}` — limit 2k",
        ]
    )
    return shown, text


@_kind("iban")
def _iban_kind(rng: random.Random) -> tuple[str, str]:
    iban = _iban(rng)
    shown = _group(iban, [4] * 9) if rng.random() < 0.6 else iban
    text = rng.choice(
        [
            f"Rent goes to {shown} (Verwendungszweck: Miete Juni)",
            f"IBAN: {shown}\nBIC: {rng.choice(['COBADEFFXXX', 'NWBKGB2L', 'INGBNL2A', 'BNPAFRPP'])}",
            f"Refund to my account please — {shown}",
            f"| payee | IBAN |\n|---|---|\n| Anna Kowalski | {shown} |",
        ]
    )
    return shown, text


@_kind("bank_account_numbers")
def _bank(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        acct = _digits(rng, rng.randint(9, 12))
        text = rng.choice(
            [
                f"Direct deposit: routing {_aba(rng)}, account {acct} (checking)",
                f"ACH details\nABA: {_aba(rng)}\nAccount #: {acct}",
            ]
        )
    elif roll == 1:
        acct = _s(rng, _DIG, 8)
        sort = f"{rng.randint(10, 99)}-{rng.randint(10, 99)}-{rng.randint(10, 99)}"
        text = rng.choice([f"Sort code {sort}, account {acct}", f"Pay me at {sort} / {acct} (Monzo)"])
    else:
        acct = _digits(rng, rng.randint(8, 9))
        text = f"BSB 062-{rng.randint(100, 999)}, account number {acct}"
    return acct, text


@_kind("us_ssn")
def _ssn_kind(rng: random.Random) -> tuple[str, str]:
    ssn = _ssn(rng)
    shown = rng.choice([ssn, ssn.replace("-", " "), ssn.replace("-", "")])
    text = rng.choice(
        [
            f"SSN: {shown}",
            f"For the W-9 form: social security number {shown}",
            f"Mom's SSN is {shown} (for the Medicare paperwork)",
            f"tax_id: {shown}",
        ]
    )
    return shown, text


@_kind("national_ids_misc")
def _ids(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(6)
    if roll == 0:
        first = rng.choice("ABCEGHJKLMNOPRSTWXYZ")
        second = rng.choice([c for c in "ABCEGHJKLMNPRSTWXYZ" if first + c not in {"BG", "GB", "KN", "NK", "NT", "TN"}])
        digits = _s(rng, _DIG, 6)
        suffix = rng.choice("ABCD")
        spaced = f"{first}{second} {_group(digits, [2, 2, 2])} {suffix}"
        secret = rng.choice([f"{first}{second}{digits}{suffix}", spaced])
        text = f"National Insurance number: {secret}"
    elif roll == 1:
        n = _s(rng, _DIG, 8)
        secret = n + "TRWAGMYFPDXBNJZSQVHLCKE"[int(n) % 23]
        text = f"DNI {secret} (para la gestoría)"
    elif roll == 2:
        secret = _cpf(rng)
        text = f"CPF: {secret}"
    elif roll == 3:
        sin = _luhn(rng, rng.choice("1234567"), 9)
        secret = rng.choice([_group(sin, [3, 3, 3]), _group(sin, [3, 3, 3], "-")])
        text = f"SIN {secret} — needed for the payroll form"
    elif roll == 4:
        secret = _bsn(rng)
        text = f"BSN: {secret} (voor de huurovereenkomst)"
    else:
        secret = _nir(rng)
        text = f"Numéro de sécu : {secret}"
    return secret, text


@_kind("phone_north_america")
def _phone_na(rng: random.Random) -> tuple[str, str]:
    area = rng.choice([415, 212, 646, 312, 206, 617, 512, 303, 416, 604, 720, 919])
    exch = rng.choice([n for n in range(201, 999) if n % 100 != 11 and n != 555])
    line = _s(rng, _DIG, 4)
    shown = rng.choice(
        [
            f"({area}) {exch}-{line}",
            f"{area}-{exch}-{line}",
            f"+1 {area} {exch} {line}",
            f"{area}.{exch}.{line}",
            f"+1-{area}-{exch}-{line}",
            f"1{area}{exch}{line}",
        ]
    )
    text = rng.choice(
        [
            f"My cell: {shown}",
            f"Mom: {shown}",
            f"Landlord (Greg) {shown} — text, don't call",
            f"Emergency contact: Sarah Lee, {shown}",
            f"- phone: {shown}",
        ]
    )
    return shown, text


@_kind("phone_europe")
def _phone_eu(rng: random.Random) -> tuple[str, str]:
    def d(n: int) -> str:
        return _s(rng, _DIG, n)

    shown = rng.choice(
        [
            f"07{rng.choice('3456789')}{d(2)} {d(6)}",
            f"+44 7{rng.choice('3456789')}{d(2)} {d(6)}",
            f"+44 (0)7{rng.choice('3456789')}{d(2)} {d(3)} {d(3)}",
            f"+49 15{rng.choice('1279')} {d(8)}",
            f"0171 {d(7)}",
            f"06 {d(2)} {d(2)} {d(2)} {d(2)}",
            f"+33 7 {d(2)} {d(2)} {d(2)} {d(2)}",
            f"06-{d(8)}",
            f"+31 6 {d(8)}",
            f"+39 3{d(2)} {d(3)} {d(4)}",
            f"+34 6{d(2)} {d(2)} {d(2)} {d(2)}",
            f"+7 (9{d(2)}) {d(3)}-{d(2)}-{d(2)}",
            f"+48 5{d(2)} {d(3)} {d(3)}",
        ]
    )
    text = rng.choice(
        [
            f"Handy: {shown}",
            f"Call me on {shown}",
            f"Zahnarzt-Termin verschieben, meine Nummer {shown}",
            f"Tél. perso : {shown}",
            f"contact: Anna Kowalska, {shown}",
        ]
    )
    return shown, text


@_kind("phone_apac_latam")
def _phone_apac(rng: random.Random) -> tuple[str, str]:
    def d(n: int) -> str:
        return _s(rng, _DIG, n)

    shown = rng.choice(
        [
            f"090-{d(4)}-{d(4)}",
            f"+81 80-{d(4)}-{d(4)}",
            f"+91 9{d(4)} {d(5)}",
            f"098{d(3)} {d(5)}",
            f"04{d(2)} {d(3)} {d(3)}",
            f"+61 4{d(2)} {d(3)} {d(3)}",
            f"010-{d(4)}-{d(4)}",
            f"+82 10-{d(4)}-{d(4)}",
            f"+65 9{d(3)} {d(4)}",
            f"+55 11 9{d(4)}-{d(4)}",
            f"(21) 9{d(4)}-{d(4)}",
            f"+52 55 {d(4)} {d(4)}",
            f"+54 9 11 {d(4)}-{d(4)}",
            f"021 {d(3)} {d(4)}",
            f"+27 82 {d(3)} {d(4)}",
            f"+234 803 {d(3)} {d(4)}",
        ]
    )
    text = rng.choice(
        [
            f"Phone: {shown}",
            f"WhatsApp me on {shown}",
            f"Driver's number (Bali trip): {shown}",
            f"携帯 {shown}",
            f"My number changed, new one is {shown}",
        ]
    )
    return shown, text


_FIRST = ["anna", "jonas", "mia", "ravi", "lucas", "sofia", "emeka", "yuki", "chloe", "mateo", "ingrid", "omar"]
_LAST = ["kowalski", "schmidt", "tanaka", "iyer", "dubois", "moreau", "okafor", "lindqvist", "garcia", "novak"]


@_kind("email_personal")
def _email(rng: random.Random) -> tuple[str, str]:
    f, last = rng.choice(_FIRST), rng.choice(_LAST)
    local = rng.choice(
        [
            f"{f}.{last}{rng.randint(70, 99)}",
            f"{f[0]}{last}",
            f"{f}_{last}",
            f"{f}{last}+{rng.choice(['shop', 'news'])}",
            f"{f}.{last}",
            f"{last}.{f}{rng.randint(1, 9)}",
        ]
    )
    dom = rng.choice(
        [
            "gmail.com",
            "outlook.com",
            "proton.me",
            "icloud.com",
            "fastmail.com",
            "web.de",
            "gmx.net",
            "yahoo.co.jp",
            "orange.fr",
            "hotmail.co.uk",
            "pm.me",
            "tutanota.com",
        ]
    )
    addr = f"{local}@{dom}"
    text = rng.choice(
        [
            f"personal email: {addr}",
            f"{f.capitalize()} {last.capitalize()} <{addr}>",
            f"[mail me](mailto:{addr})",
            f"Apple ID is {addr}",
            f"User prefers to be contacted at {addr}, not the work address.",
        ]
    )
    return addr, text


@_kind("email_obfuscated")
def _email_obf(rng: random.Random) -> tuple[str, str]:
    f, last = rng.choice(_FIRST), rng.choice(_LAST)
    local = rng.choice([f"{f}.{last}", f"{f}{last}{rng.randint(1, 99)}", f"{f[0]}.{last}"])
    name, tld = rng.choice([("gmail", "com"), ("proton", "me"), ("outlook", "com"), ("posteo", "de"), ("yahoo", "fr")])
    shown = rng.choice(
        [
            f"{local} [at] {name} [dot] {tld}",
            f"{local.replace('.', ' dot ')} at {name} dot {tld}",
            f"{local}(at){name}.{tld}",
            f"{local} AT {name} DOT {tld}",
            f"{local}@{name}[.]{tld}",
            f"{local} {{at}} {name} {{dot}} {tld}",
            f"{local}@NOSPAM.{name}.{tld}",
            f"{local} <at> {name} <dot> {tld}",
        ]
    )
    text = rng.choice([f"reach me: {shown}", f"Email (spam-proofed): {shown}", f"contact → {shown}"])
    return shown, text


@_kind("messaging_handles")
def _handles(rng: random.Random) -> tuple[str, str]:
    f, last = rng.choice(_FIRST), rng.choice(_LAST)
    roll = rng.randrange(7)
    if roll == 0:
        secret = f"{f}_{last[:5]}{rng.randint(1, 99)}"
        text = f"Telegram: @{secret}"
    elif roll == 1:
        secret = f"{f}{last[:3]}.{rng.randint(10, 99)}"
        text = f"Signal username {secret}"
    elif roll == 2:
        secret = f"{f}_{rng.randint(1000, 9999)}"
        text = f"LINE ID: {secret}"
    elif roll == 3:
        secret = f"@{f}.{last}:matrix.org"
        text = f"Matrix: {secret}"
    elif roll == 4:
        secret = f"live:.cid.{_s(rng, _HEX, 16)}"
        text = f"Skype {secret}"
    elif roll == 5:
        secret = _s(rng, _UP + _DIG, 8)
        text = f"Threema ID {secret}"
    else:
        secret = "05" + _s(rng, _HEX, 64)
        text = f"Session ID: {secret}"
    return secret, text


@_kind("home_address")
def _address(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(4)
    if roll == 0:
        street = (
            f"{rng.randint(12, 9899)} {rng.choice(['Maple Ridge', 'Oak', 'Willow Creek', 'Cedar', 'Magnolia'])} "
            f"{rng.choice(['Dr', 'St', 'Ave', 'Ln', 'Ct'])}"
        )
        if rng.random() < 0.5:
            street += f", Apt {rng.randint(1, 30)}{rng.choice('ABCD')}"
        city = rng.choice(["Austin, TX 787", "Portland, OR 972", "Denver, CO 802", "Raleigh, NC 276"])
        city += _s(rng, _DIG, 2)
    elif roll == 1:
        street = (
            f"Flat {rng.randint(1, 24)}, {rng.randint(2, 180)} "
            f"{rng.choice(['Abbey Road', 'Elm Grove', 'Church Lane', 'Victoria Street', 'Mill Road'])}"
        )
        city = f"{rng.choice(['London', 'Leeds', 'Bristol', 'Manchester'])} {rng.choice(['NW', 'LS', 'BS', 'M'])}"
        city += f"{rng.randint(1, 20)} {rng.randint(1, 9)}{_s(rng, 'ABDEFGHJLNPQRSTUWXYZ', 2)}"
    elif roll == 2:
        street = f"{rng.choice(['Lindenstraße', 'Goethestraße', 'Am Rosenhang', 'Schillerweg'])} {rng.randint(1, 140)}"
        if rng.random() < 0.4:
            street += rng.choice(["a", "b"])
        city = f"{_s(rng, _DIG, 5)} {rng.choice(['Berlin', 'München', 'Leipzig', 'Köln'])}"
    else:
        street = f"Unit {rng.randint(1, 40)}/{rng.randint(2, 300)} {rng.choice(['Smith', 'Brunswick', 'Oxford'])} St"
        city = f"{rng.choice(['Fitzroy VIC', 'Newtown NSW', 'West End QLD'])} {rng.randint(3000, 4200)}"
    text = rng.choice(
        [
            f"Home: {street}, {city}",
            f"ship to:\nAnna Kowalski\n{street}\n{city}",
            f"I live at {street}, {city}.",
            f"new address (moved in May): {street}, {city}",
        ]
    )
    return street, text


def _private_ip(rng: random.Random) -> str:
    return rng.choice(
        [
            f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            f"192.168.{rng.randint(0, 99)}.{rng.randint(2, 254)}",
            f"100.{rng.randint(64, 127)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
            f"fd{_s(rng, _HEX, 2)}:{_s(rng, _HEX, 4)}:{_s(rng, _HEX, 4)}::{rng.randint(2, 250)}",
        ]
    )


@_kind("private_ip")
def _ip(rng: random.Random) -> tuple[str, str]:
    ip = _private_ip(rng)
    host = f"[{ip}]" if ":" in ip else ip
    text = rng.choice(
        [
            f"Home Assistant runs on http://{host}:8123",
            f"ssh pi@{ip}",
            f"The NAS is at {ip}, DSM on port 5001",
            f"DB replica: {ip} (VPN only)",
            f"/etc/hosts\n{ip}  grafana.lan",
            f"Fact: (printer) --[has_ip]--> {ip}",
        ]
    )
    return ip, text


@_kind("internal_hostname")
def _hostname(rng: random.Random) -> tuple[str, str]:
    co = rng.choice(["acme-robotics", "kestrel", "bluefin", "nordwind", "zephyrlabs", "orchardhq"])
    svc = rng.choice(["vault", "jenkins", "grafana", "pg-primary", "ldap", "jira", "bastion", "k8s-api", "minio"])
    host = rng.choice(
        [
            f"{svc}-{rng.randint(1, 12):02d}.{rng.choice(['prod', 'stg', 'dev'])}.{co}.internal",
            f"{svc}.corp.{co}.local",
            f"{svc}.{co}.lan",
            f"{svc}.int.{co}.intra",
            f"ip-10-{rng.randint(0, 255)}-{rng.randint(0, 255)}-{rng.randint(2, 254)}.ec2.internal",
        ]
    )
    text = rng.choice(
        [
            f"VPN first, then open https://{host}/",
            f"ssh -J bastion {host}",
            f"VAULT_ADDR=https://{host}:8200",
            f"postgres primary lives on {host}:5432",
            f"Agent memory: the team's CI server is {host}",
        ]
    )
    return host, text


# ===============================================================================================================
# Chinese kinds


@_kind("cn_id_card", zh=True)
def _cn_id_kind(rng: random.Random) -> tuple[str, str]:
    idn = _cn_id(rng)
    shown = idn if rng.random() < 0.7 else f"{idn[:6]} {idn[6:14]} {idn[14:]}"
    name = rng.choice(_CN_NAMES)
    text = rng.choice(
        [
            f"身份证号：{shown}",
            f"{name}的身份证号 {shown}，订机票要用",
            f"备忘｜办护照材料：身份证（{shown}）、户口本首页、两张白底照片",
            f"- 证件号码: {shown}\n- 有效期: 2031.05.12",
            f"老妈身份证号是{shown}，给她挂号用的",
            f"| 姓名 | 身份证号 |\n|---|---|\n| {name} | {shown} |",
        ]
    )
    return shown, text


@_kind("cn_mobile", zh=True)
def _cn_mobile(rng: random.Random) -> tuple[str, str]:
    n = rng.choice(["13", "15", "17", "18", "19"]) + _s(rng, _DIG, 9)
    shown = rng.choice(
        [
            n,
            f"{n[:3]} {n[3:7]} {n[7:]}",
            f"{n[:3]}-{n[3:7]}-{n[7:]}",
            f"+86 {n[:3]} {n[3:7]} {n[7:]}",
            f"+86-{n}",
            f"(+86){n}",
            f"86-{n}",
        ]
    )
    name = rng.choice(_CN_NAMES)
    text = rng.choice(
        [
            f"我的手机号：{shown}",
            f"紧急联系人：{name}（老婆）{shown}",
            f"快递收件电话填 {shown}，别填公司座机",
            f"房东{name}电话{shown}，每月5号前交房租",
            f"微信同号 {shown}",
            f"用户说：以后打我这个号 {shown}",
        ]
    )
    return shown, text


@_kind("cn_landline", zh=True)
def _cn_landline(rng: random.Random) -> tuple[str, str]:
    area = rng.choice(["010", "021", "020", "0755", "0571", "028", "027", "0532"])
    local = rng.choice("2345678") + _s(rng, _DIG, 7)
    shown = rng.choice([f"{area}-{local}", f"({area}) {local[:4]} {local[4:]}", f"{area}-{local[:4]} {local[4:]}"])
    text = rng.choice(
        [
            f"家里座机 {shown}",
            f"爸妈家电话：{shown}（晚上 8 点后打）",
            f"公司前台 {shown} 转 8021，找我直接说名字",
            f"固话：{shown}",
        ]
    )
    return shown, text


@_kind("cn_bank_card", zh=True)
def _cn_card(rng: random.Random) -> tuple[str, str]:
    bank, bin_ = rng.choice(
        [
            ("招商银行", "622588"),
            ("工商银行", "622202"),
            ("建设银行", "621700"),
            ("农业银行", "622848"),
            ("中国银行", "621661"),
            ("交通银行", "622260"),
        ]
    )
    num = _luhn(rng, bin_, rng.choice([16, 19]))
    shown = rng.choice([num, _group(num, [4, 4, 4, 4, 3]), _group(num, [6, 13])])
    name = rng.choice(_CN_NAMES)
    text = rng.choice(
        [
            f"工资卡：{bank} {shown}",
            f"收款账户：{bank} {shown}（户名 {name}）",
            f"银行卡号 {shown}，开户行 {bank}北京朝阳支行",
            f"房租转到这张卡：{shown}",
            f"用户：帮我记一下，{bank}卡号是 {shown}",
        ]
    )
    return shown, text


_CN_PLACES = [
    ("北京市", "朝阳区", ["望京街道阜通东大街", "建国路", "东三环北路", "安立路"]),
    ("上海市", "浦东新区", ["张杨路", "世纪大道", "锦绣路", "杨高南路"]),
    ("广东省深圳市", "南山区", ["科技南十二路", "后海大道", "沙河西路"]),
    ("浙江省杭州市", "西湖区", ["文三路", "天目山路", "古墩路"]),
    ("四川省成都市", "武侯区", ["天府大道北段", "科华北路", "人民南路四段"]),
    ("湖北省武汉市", "洪山区", ["珞喻路", "关山大道", "雄楚大道"]),
]


@_kind("cn_home_address", zh=True)
def _cn_addr(rng: random.Random) -> tuple[str, str]:
    city, district, streets = rng.choice(_CN_PLACES)
    street = rng.choice(streets)
    no, b, u = rng.randint(1, 1288), rng.randint(1, 18), rng.randint(1, 4)
    room = rng.randint(1, 32) * 100 + rng.randint(1, 6)
    estate = rng.choice(["阳光花园", "翠湖小区", "万科城", "保利香槟国际", "金地名苑", ""])
    secret = rng.choice(
        [
            f"{street}{no}号{estate}{b}栋{u}单元{room}室",
            f"{street}{no}号院{b}号楼{u}单元{room}",
            f"{street} {no} 号 {b} 栋 {room} 室",
        ]
    )
    name = rng.choice(_CN_NAMES)
    text = rng.choice(
        [
            f"家庭住址：{city}{district}{secret}",
            f"收货地址：{name} {city}{district}{secret}",
            f"新家地址 {city}{district}{secret}（下月搬）",
            f"我住在{district}{secret}，离地铁站走路 5 分钟",
        ]
    )
    return secret, text


@_kind("cn_wechat_id", zh=True)
def _cn_wechat(rng: random.Random) -> tuple[str, str]:
    py = rng.choice(_PINYIN)
    wid = rng.choice(
        [
            "wxid_" + _s(rng, _LODIG, 14),
            f"{py}{rng.randint(1975, 2005)}",
            f"{py}_{rng.randint(10, 99)}",
            f"{py[:2]}{_s(rng, _LO, 3)}{rng.randint(100, 9999)}",
        ]
    )
    text = rng.choice(
        [
            f"微信号：{wid}",
            f"加我 vx：{wid}（备注：公司名+姓名）",
            f"V❤：{wid}（备注来意）",
            f"绿泡泡 {wid}",
            f"wx: {wid}，语音别发，打字",
            f"客户王总的微信 {wid}",
        ]
    )
    return wid, text


@_kind("cn_qq_number", zh=True)
def _cn_qq(rng: random.Random) -> tuple[str, str]:
    qq = _digits(rng, rng.randint(8, 10))
    text = rng.choice(
        [
            f"QQ：{qq}（常用）",
            f"扣扣 {qq}",
            f"企鹅号：{qq}",
            f"我的 QQ 是 {qq}，邮箱就是 {qq}@qq.com",
            f"小号 QQ{qq}，密保手机已经换了",
        ]
    )
    return qq, text


@_kind("cn_wifi_password", zh=True)
def _cn_wifi(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice([_cn_pw(rng, avoid=';,:\\"'), _s(rng, _LODIG, rng.randint(8, 12)), _digits(rng, 8)])
    ssid = rng.choice([f"ChinaNet-{_s(rng, _UP + _DIG, 4)}", f"Xiaomi_{_s(rng, _HEX.upper(), 4)}_5G", "CMCC-home"])
    text = rng.choice(
        [
            f"家里WiFi：名称 {ssid}，密码 {pw}",
            f"办公室无线：SSID {ssid} / 密码：{pw}",
            f"wifi密码是{pw}（客厅路由器那台）",
            f"WIFI:T:WPA;S:{ssid};P:{pw};;  ← 打印成二维码贴冰箱上",
            f"民宿 WiFi：{ssid}，密码「{pw}」",
        ]
    )
    return pw, text


@_kind("cn_door_code", zh=True)
def _cn_door(rng: random.Random) -> tuple[str, str]:
    code = _s(rng, _DIG, rng.choice([6, 6, 8]))
    shown = rng.choice([f"#{code}#", f"{code}#", f"*{code}", code])
    text = rng.choice(
        [
            f"小区单元门禁密码：{shown}",
            f"智能门锁密码 {shown}（临时的，周五改回来）",
            f"公司侧门密码 {shown}，进门后按 #",
            f"丰巢取件码 {shown}",
            f"车库键盘输入 {shown} 开门",
            f"爸妈家门锁：{shown}",
        ]
    )
    return shown, text


@_kind("cn_safe_code", zh=True)
def _cn_safe(rng: random.Random) -> tuple[str, str]:
    a, b, c = (rng.randint(0, 99) for _ in range(3))
    code = _s(rng, _DIG, 6)
    secret, text = rng.choice(
        [
            (code, f"保险柜密码 {code}"),
            (f"{a:02d}-{b:02d}-{c:02d}", f"家里保险箱：{a:02d}-{b:02d}-{c:02d}"),
            (code, f"酒店保险箱设成了 {code}，退房前记得取护照"),
            (f"左转 {a} 右转 {b} 左转 {c}", f"财务室保险柜：左转 {a} 右转 {b} 左转 {c}，再拧把手"),
        ]
    )
    return secret, text


@_kind("cn_sms_code", zh=True)
def _cn_sms(rng: random.Random) -> tuple[str, str]:
    code = _s(rng, _DIG, 6)
    text = rng.choice(
        [
            f"【招商银行】验证码{code}，您正在进行网上支付，请勿泄露。",
            f"【阿里云】您的验证码为 {code}，该验证码5分钟内有效，请勿泄漏于他人！",
            f"刚收到的登录验证码 {code}，帮我填一下",
            f"【12306】{code}（动态验证码），打死也不要告诉别人哦！",
            f"用户：验证码是 {code}，你帮我登上去",
        ]
    )
    return code, text


@_kind("cn_bip39_chinese", zh=True)
def _cn_bip39(rng: random.Random) -> tuple[str, str]:
    words = _mnemonic(rng, _BIP39_ZH, rng.choice([12, 12, 24]))
    shown = rng.choice(
        [
            " ".join(words),
            "".join(words),
            "\n".join(" ".join(words[i : i + 4]) for i in range(0, len(words), 4)),
            " ".join(f"{i}.{w}" for i, w in enumerate(words, 1)),
        ]
    )
    text = rng.choice(
        [
            f"助记词（千万别截图）：{shown}",
            f"imToken 钱包备份\n{shown}",
            f"冷钱包助记词：\n{shown}\n抄在纸上放保险柜了",
        ]
    )
    return shown, text


@_kind("cn_bip39_english_mixed", zh=True)
def _cn_bip39_en(rng: random.Random) -> tuple[str, str]:
    words = _mnemonic(rng, _BIP39_EN, rng.choice([12, 24]))
    shown = rng.choice([" ".join(words), "\n".join(f"{i}. {w}" for i, w in enumerate(words, 1))])
    text = rng.choice(
        [
            f"钱包助记词 {len(words)} 个：{shown}",
            f"小狐狸（MetaMask）恢复短语：\n{shown}",
            f"OKX Web3 钱包助记词备份 👇\n{shown}",
        ]
    )
    return shown, text


@_kind("cn_aliyun_accesskey", zh=True)
def _cn_aliyun(rng: random.Random) -> tuple[str, str]:
    ak, sk = "LTAI5t" + _s(rng, _ALNUM, 18), _s(rng, _ALNUM, 30)
    text = rng.choice(
        [
            f"阿里云 RAM 子账号 oss-uploader\nAccessKey ID: {ak}\nAccessKey Secret: {sk}",
            f"ALIBABA_CLOUD_ACCESS_KEY_ID={ak}\nALIBABA_CLOUD_ACCESS_KEY_SECRET={sk}  # OSS 上传用",
            f"auth = oss2.Auth('{ak}', '{sk}')  # 先写死，后面改成环境变量",
            f"aliyun configure 时填的 AK：{ak} / {sk}",
        ]
    )
    return sk, text


@_kind("cn_tencent_cloud_secret", zh=True)
def _cn_tencent(rng: random.Random) -> tuple[str, str]:
    sid, skey = "AKID" + _s(rng, _ALNUM, 32), _s(rng, _ALNUM, 32)
    text = rng.choice(
        [
            f"腾讯云 API 密钥\nSecretId：{sid}\nSecretKey：{skey}",
            f"# 腾讯云 COS 备份\nTENCENTCLOUD_SECRET_ID={sid}\nTENCENTCLOUD_SECRET_KEY={skey}",
            f'cred = credential.Credential("{sid}", "{skey}")  # COS 备份脚本',
            f"COS 的 SecretKey 是 {skey}，别提交到 git",
        ]
    )
    return skey, text


@_kind("cn_internal_credential", zh=True)
def _cn_internal(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice(
        [
            _s(rng, _HEX, 32),
            _s(rng, _ALNUM, rng.randint(24, 40)),
            _s(rng, _B64URL, 32),
            _s(rng, _HEX.upper(), 40),
            base64.b64encode(rng.randbytes(24)).decode(),
        ]
    )
    text = rng.choice(
        [
            f"内部网关的 app_secret：{tok}",
            f"授权码：{tok}（license，别外传）",
            f"对接方给的签名秘钥 {tok}",
            f"开放平台凭证：appKey=shop_{rng.randint(1000, 9999)}，appSecret={tok}",
            f"测试环境 token 先写死在这：{tok}",
            f"秘钥={tok}",
            f"回调验签用的密钥是 {tok}，两边要一致",
        ]
    )
    return tok, text


@_kind("cn_db_password_prose", zh=True)
def _cn_db(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice([_cn_pw(rng), _pw(rng)])
    host = _private_ip(rng)
    text = rng.choice(
        [
            f"生产库 MySQL：{host}:3306，账号 root，密码 {pw}，只能从跳板机连",
            f"测试环境数据库密码改成了 {pw}，记得同步给小王",
            f"PG 超级用户密码：{pw}（2024-06 换过）",
            f"MongoDB 管理员 admin 密码「{pw}」",
            f"记一下：数据库 密码:{pw} 用户:readonly",
        ]
    )
    return pw, text


@_kind("cn_env_with_comments", zh=True)
def _cn_env(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="'\"\\`$# ")
    var = rng.choice(["DB_PASSWORD", "MYSQL_PASSWORD", "REDIS_PASS", "MAIL_PASSWORD"])
    text = (
        "# ====== 生产环境 ======\nAPP_ENV=production\n# 数据库\n"
        f"DB_HOST={_private_ip(rng)}\nDB_USER=app\n{var}={_env_value(rng, pw)}\n"
        "# 短信（阿里云）\nSMS_SIGN_NAME=某某科技"
    )
    return pw, _fence(rng, text, "dotenv")


@_kind("cn_yaml_comments", zh=True)
def _cn_yaml(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="'\"\\`# ")
    shown = rng.choice([pw if pw[0].isalnum() else f"'{pw}'", f'"{pw}"'])
    text = (
        "spring:\n  datasource:\n    url: jdbc:mysql://10.10.2.3:3306/order?useSSL=false\n    username: order_rw\n"
        f"    password: {shown}   # 生产密码，勿提交\n  redis:\n    host: 10.10.2.9  # 缓存"
    )
    return pw, _fence(rng, text, "yaml")


@_kind("cn_jdbc_mysql", zh=True)
def _cn_jdbc(rng: random.Random) -> tuple[str, str]:
    enc = quote(_cn_pw(rng), safe="")
    host = f"rm-bp1{_s(rng, _LODIG, 15)}.mysql.rds.aliyuncs.com"
    url = f"jdbc:mysql://{host}:3306/shop?user=shop&password={enc}&useUnicode=true&characterEncoding=utf8"
    text = rng.choice([f"连接串：{url}", f"RDS 连接串（外网）\n{url}", f"Navicat 里配的就是这个：{url}"])
    return enc, text


@_kind("cn_redis_cli", zh=True)
def _cn_redis(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="'")
    host = rng.choice([f"r-bp1{_s(rng, _LODIG, 14)}.redis.rds.aliyuncs.com", _private_ip(rng)])
    text = rng.choice(
        [
            f"redis-cli -h {host} -p 6379 -a '{pw}'  # 缓存",
            f"Redis 密码 {pw}，地址 {host}",
            f"缓存集群：{host}:6379\nrequirepass {pw}",
        ]
    )
    return pw, text


@_kind("cn_server_root_password", zh=True)
def _cn_root(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice([_cn_pw(rng, avoid="/ "), _pw(rng, avoid="/ ")])
    ip = rng.choice([_private_ip(rng), f"47.{rng.randint(90, 120)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"])
    text = rng.choice(
        [
            f"服务器信息\n- IP：{ip}\n- 用户：root\n- 密码：{pw}",
            f"跳板机 {ip} root/{pw}",
            f"ssh root@{ip}  密码 {pw}",
            f"宝塔面板 http://{ip}:8888 账号 admin 密码 {pw}",
            f"阿里云 ECS 重置后的 root 密码：{pw}",
        ]
    )
    return pw, text


@_kind("cn_private_ip", zh=True)
def _cn_ip(rng: random.Random) -> tuple[str, str]:
    ip = _private_ip(rng)
    host = f"[{ip}]" if ":" in ip else ip
    text = rng.choice(
        [
            f"NAS 在 {host}:5000（群晖）",
            f"内网 GitLab：http://{host}:8929",
            f"k8s master 节点 {ip}，worker 是后面三台",
            f"打印机 IP {ip}",
            f"家里软路由 {ip}，OpenClash 面板端口 9090",
        ]
    )
    return ip, text


@_kind("cn_email", zh=True)
def _cn_email(rng: random.Random) -> tuple[str, str]:
    local = rng.choice([f"{rng.choice(_PINYIN)}{rng.randint(1, 9999)}", rng.choice(_PINYIN) + "_" + _s(rng, _LO, 2)])
    name, tld = rng.choice([("163", "com"), ("126", "com"), ("qq", "com"), ("foxmail", "com"), ("yeah", "net")])
    shown = rng.choice(
        [
            f"{local}@{name}.{tld}",
            f"{local}#{name}.{tld}（#换成@）",
            f"{local}＠{name}.{tld}",
            f"{local} 艾特 {name} 点 {tld}",
            f"{local}[at]{name}.{tld}",
        ]
    )
    text = rng.choice([f"私人邮箱：{shown}", f"简历投递发到 {shown}", f"有事发邮件 {shown}", f"个人邮箱 {shown}"])
    return shown, text


@_kind("cn_alipay_account", zh=True)
def _cn_alipay(rng: random.Random) -> tuple[str, str]:
    acct = rng.choice(
        [
            rng.choice(["13", "15", "18"]) + _s(rng, _DIG, 9),
            f"{rng.choice(_PINYIN)}{rng.randint(10, 99)}@{rng.choice(['163.com', 'qq.com', 'sina.com'])}",
        ]
    )
    name = rng.choice(_CN_NAMES)
    text = rng.choice(
        [
            f"支付宝：{acct}（实名 {name}）",
            f"转账到支付宝 {acct} 就行",
            f"收款支付宝账号 {acct}",
        ]
    )
    return acct, text


@_kind("cn_dingtalk_webhook", zh=True)
def _cn_dingtalk(rng: random.Random) -> tuple[str, str]:
    tok, sec = _s(rng, _HEX, 64), "SEC" + _s(rng, _HEX, 64)
    text = f"钉钉告警机器人\nwebhook: https://oapi.dingtalk.com/robot/send?access_token={tok}\n加签密钥: {sec}"
    return rng.choice([tok, sec]), text


@_kind("cn_feishu_secret", zh=True)
def _cn_feishu(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        secret = _uuid(rng)
        text = f"飞书群机器人：https://open.feishu.cn/open-apis/bot/v2/hook/{secret}"
    else:
        secret = _s(rng, _ALNUM, 32)
        text = f"飞书自建应用\nApp ID: cli_{_s(rng, _HEX, 16)}\nApp Secret: {secret}"
    return secret, text


@_kind("cn_wecom_webhook", zh=True)
def _cn_wecom(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        secret = _uuid(rng)
        text = f"企业微信群机器人 https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={secret}"
    else:
        secret = _s(rng, _B64URL, 43)
        text = f"企微 corpid=ww{_s(rng, _HEX, 16)}，corpsecret={secret}（通讯录同步用）"
    return secret, text


@_kind("cn_wechat_appsecret", zh=True)
def _cn_wx_secret(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        secret = _s(rng, _HEX, 32)
        text = f"公众号 AppID：wx{_s(rng, _HEX, 16)}\nAppSecret：{secret}"
    elif roll == 1:
        secret = _s(rng, _HEX, 32)
        text = f"小程序 appid=wx{_s(rng, _HEX, 16)} appsecret={secret}"
    else:
        secret = _s(rng, _ALNUM, 32)
        text = f"微信支付 商户号 {_digits(rng, 10)}，APIv3 密钥 {secret}"
    return secret, text


@_kind("tw_id_number", zh=True)
def _tw_id(rng: random.Random) -> tuple[str, str]:
    idn = _twid(rng)
    text = rng.choice(
        [
            f"身分證字號：{idn}",
            f"我的身分證 {idn}，報名用",
            f"健保卡號碼跟身分證字號 {idn} 都要填",
            f"媽媽的身分證字號是 {idn}",
        ]
    )
    return idn, text


@_kind("hk_id_card", zh=True)
def _hk_id(rng: random.Random) -> tuple[str, str]:
    body, check = _hkid(rng)
    shown = rng.choice([f"{body}({check})", f"{body}{check}", f"{body} ({check})"])
    text = rng.choice([f"香港身份證號碼：{shown}", f"HKID {shown}（開戶用）", f"身份證 {shown}，續證預約咗下個月"])
    return shown, text


@_kind("cn_ssh_private_key", zh=True)
def _cn_key(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        label, lines = _pem(rng, "RSA PRIVATE KEY")
    else:
        label, lines = "OPENSSH PRIVATE KEY", _openssh_lines(rng)
    body = "\n".join(lines)
    block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    text = rng.choice(
        [
            f"阿里云 ECS 的密钥对（下载的 .pem），备份一下：\n```\n{block}\n```",
            f"服务器私钥（别发群里）：\n{block}",
            f"部署用的 id_rsa：\n{block}",
        ]
    )
    return body, text


@_kind("cn_wallet_private_key", zh=True)
def _cn_wallet(rng: random.Random) -> tuple[str, str]:
    raw = _s(rng, _HEX, 64)
    key = rng.choice([raw, "0x" + raw])
    text = rng.choice(
        [
            f"小狐狸钱包（MetaMask）私钥：{key}",
            f"TronLink 私钥 {key}，里面有 500 U",
            f"币安链钱包私钥：{key}",
            f"用户：这是我的钱包私钥 {key}，帮我查下余额",
        ]
    )
    return key, text


@_kind("cn_recovery_codes", zh=True)
def _cn_recovery(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        codes = [f"{_s(rng, _LODIG, 5)}-{_s(rng, _LODIG, 5)}" for _ in range(16)]
        head = "GitHub 两步验证恢复码（存好，每个只能用一次）："
    else:
        codes = [f"{_s(rng, _DIG, 4)} {_s(rng, _DIG, 4)}" for _ in range(10)]
        head = "谷歌账号备用验证码："
    text = head + "\n" + "\n".join(codes)
    return rng.choice(codes), _fence(rng, text)


@_kind("cn_json_escaped_chat", zh=True)
def _cn_json(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="\"\\'")
    ascii_only = rng.random() < 0.4
    if rng.random() < 0.5:
        inner = json.dumps({"host": _private_ip(rng), "user": "root", "password": pw}, ensure_ascii=False)
        text = json.dumps({"role": "user", "content": f"帮我看看这个配置哪里不对：{inner}"}, ensure_ascii=ascii_only)
    else:
        args = json.dumps({"command": f"mysql -uroot -p'{pw}' -e 'show databases'"}, ensure_ascii=False)
        msg = {"role": "assistant", "content": "我来连一下数据库", "tool_call": {"name": "bash", "arguments": args}}
        text = json.dumps(msg, ensure_ascii=ascii_only)
    return pw, rng.choice(["会话记录（原样导出）：\n", "聊天日志 ↓\n", "昨天的对话：\n"]) + text


@_kind("cn_markdown_table", zh=True)
def _cn_table(rng: random.Random) -> tuple[str, str]:
    rows = [
        ("测试后台", "http://10.0.3.8:8080", "admin"),
        ("路由器", "192.168.1.1", "admin"),
        ("群晖 NAS", "http://192.168.31.20:5000", "zhangwei"),
        ("禅道", "http://172.16.0.9/zentao", "pm"),
        ("Jenkins", "http://10.1.0.4:8080", "deploy"),
    ]
    chosen = rng.sample(rows, 3)
    pws = [_cn_pw(rng, avoid="|`") for _ in chosen]
    lines = ["| 系统 | 地址 | 账号 | 密码 |", "| --- | --- | --- | --- |"]
    for (name, url, user), pw in zip(chosen, pws, strict=True):
        lines.append(f"| {name} | {url} | {user} | {pw} |")
    return rng.choice(pws), "常用账号密码：\n\n" + "\n".join(lines)


@_kind("cn_split_token", zh=True)
def _cn_split(rng: random.Random) -> tuple[str, str]:
    tok = rng.choice([_any_token(rng), "sk-" + _s(rng, _HEX, 32), "LTAI5t" + _s(rng, _ALNUM, 18) + _s(rng, _ALNUM, 30)])
    cut = rng.randint(len(tok) // 3, 2 * len(tok) // 3)
    a, b = tok[:cut], tok[cut:]
    roll = rng.randrange(3)
    if roll == 0:
        secret = f"{a}\n{b}"
        text = f"token 太长了，微信里被折成两行：\n{secret}\n拼起来用"
    elif roll == 1:
        secret = f"{a}\\\n{b}"
        text = f'# 线上的 key，先这样\nexport API_KEY="{secret}"'
    else:
        secret = f"{a}\n{b}"
        text = f"密钥（复制时换行了）：\n```\n{secret}\n```"
    return secret, text


_POEM = [
    "床前明月光",
    "疑是地上霜",
    "春眠不觉晓",
    "处处闻啼鸟",
    "白日依山尽",
    "黄河入海流",
    "欲穷千里目",
    "更上一层楼",
    "海内存知己",
    "天涯若比邻",
    "锄禾日当午",
    "汗滴禾下土",
]


@_kind("cn_passphrase_spaces", zh=True)
def _cn_phrase(rng: random.Random) -> tuple[str, str]:
    roll = rng.randrange(3)
    if roll == 0:
        a, b = rng.sample(_POEM, 2)
        phrase = f"{a} {b} {rng.randint(1980, 2024)}"
    elif roll == 1:
        phrase = " ".join(rng.sample(["chun", "mian", "bu", "jue", "xiao", "da", "hai", "wu", "liang", "tian"], 5))
        phrase += f" {rng.randint(10, 99)}!"
    else:
        phrase = " ".join(rng.sample(_PHRASE_WORDS, 4)) + f" {rng.randint(100, 999)}"
    text = rng.choice(
        [
            f"KeePass 主密码：{phrase}",
            f"加密硬盘 VeraCrypt 口令「{phrase}」",
            f"1Password 主密码 = {phrase}（包括空格）",
            f"私钥的 passphrase 是 {phrase}",
        ]
    )
    return phrase, text


@_kind("cn_docker_registry_login", zh=True)
def _cn_docker(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="'")
    text = rng.choice(
        [
            f"docker login --username=zhangwei@1688 registry.cn-hangzhou.aliyuncs.com -p '{pw}'\n# 阿里云镜像仓库",
            f"docker login harbor.corp.local -u admin -p '{pw}'   # 内网 Harbor",
            f"镜像仓库 ccr.ccs.tencentyun.com 账号 100012345678 密码 {pw}",
        ]
    )
    return pw, text


@_kind("cn_gitee_token_remote", zh=True)
def _cn_gitee(rng: random.Random) -> tuple[str, str]:
    tok = _s(rng, _HEX, 32)
    user = rng.choice(_PINYIN)
    text = rng.choice(
        [
            f"git remote add gitee https://{user}:{tok}@gitee.com/{user}/blog.git  # 推到码云",
            f"码云私人令牌：{tok}",
            f"Gitee token {tok}（只勾了 projects 权限）",
        ]
    )
    return tok, text


@_kind("cn_payment_pin", zh=True)
def _cn_pin(rng: random.Random) -> tuple[str, str]:
    while True:
        pin = _s(rng, _DIG, 6)
        if len(set(pin)) >= 3 and pin not in "0123456789" and pin not in "9876543210":
            break
    text = rng.choice(
        [
            f"支付宝支付密码 {pin}",
            f"银行卡取款密码：{pin}（工行那张）",
            f"微信支付密码跟门锁一样，都是 {pin}",
            f"用户：记住我的支付密码{pin}，以后帮我付款",
        ]
    )
    return pin, text


@_kind("tw_hk_phone", zh=True)
def _tw_hk_phone(rng: random.Random) -> tuple[str, str]:
    shown = rng.choice(
        [
            f"09{_s(rng, _DIG, 2)}-{_s(rng, _DIG, 3)}-{_s(rng, _DIG, 3)}",
            f"+886 9{_s(rng, _DIG, 2)} {_s(rng, _DIG, 3)} {_s(rng, _DIG, 3)}",
            f"+852 {rng.choice('569')}{_s(rng, _DIG, 3)} {_s(rng, _DIG, 4)}",
            f"{rng.choice('569')}{_s(rng, _DIG, 3)} {_s(rng, _DIG, 4)}",
            f"+853 6{_s(rng, _DIG, 3)} {_s(rng, _DIG, 4)}",
        ]
    )
    text = rng.choice(
        [
            f"我的手機：{shown}",
            f"有事打給我 {shown}（LINE 同號）",
            f"阿嬤家電話 {shown}",
            f"搵我就打 {shown}",
        ]
    )
    return shown, text


_TW_PLACES = [
    ("臺北市", "大安區", ["忠孝東路四段", "復興南路一段", "信義路三段"]),
    ("新北市", "板橋區", ["文化路一段", "中山路二段"]),
    ("臺中市", "西屯區", ["臺灣大道三段", "市政北二路"]),
    ("高雄市", "苓雅區", ["四維三路", "中正二路"]),
]


@_kind("tw_address", zh=True)
def _tw_addr(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.75:
        city, dist, roads = rng.choice(_TW_PLACES)
        road = rng.choice(roads)
        secret = rng.choice(
            [
                f"{road}{rng.randint(1, 300)}巷{rng.randint(1, 30)}弄{rng.randint(1, 80)}號{rng.randint(2, 15)}樓",
                f"{road}{rng.randint(1, 300)}號{rng.randint(2, 25)}樓之{rng.randint(1, 9)}",
            ]
        )
        place = f"{city}{dist}"
    else:
        road = rng.choice(["彌敦道", "亞皆老街", "英皇道", "軒尼詩道"])
        bldg = rng.choice(["華明大廈", "康樂樓", "海景閣"])
        secret = f"{road}{rng.randint(1, 700)}號{bldg}{rng.randint(2, 30)}樓{rng.choice('ABCDEF')}室"
        place = rng.choice(["九龍旺角", "香港北角", "香港灣仔"])
    text = rng.choice([f"住址：{place}{secret}", f"包裹寄到這裡：{place}{secret}", f"我家地址 {place}{secret}"])
    return secret, text


@_kind("cn_llm_api_key", zh=True)
def _cn_llm(rng: random.Random) -> tuple[str, str]:
    vendor, key = rng.choice(
        [
            ("DeepSeek", "sk-" + _s(rng, _HEX, 32)),
            ("Kimi（Moonshot）", "sk-" + _s(rng, _ALNUM, 48)),
            ("智谱", _s(rng, _HEX, 32) + "." + _s(rng, _ALNUM, 16)),
            ("通义千问 DashScope", "sk-" + _s(rng, _HEX, 32)),
            ("硅基流动", "sk-" + _s(rng, _LO, 48)),
            ("百度千帆", "bce-v3/ALTAK-" + _s(rng, _ALNUM, 21) + "/" + _s(rng, _HEX, 40)),
        ]
    )
    text = rng.choice(
        [
            f"{vendor} 的 API Key：{key}",
            f"用户：用我的 {vendor} key 跑一下，{key}",
            f"{vendor} 的密钥 {key}（余额不多了）",
            f"OPENAI_API_KEY={key}  # 其实是 {vendor} 的，兼容 OpenAI 接口",
        ]
    )
    return key, text


@_kind("cn_qq_email_smtp_auth", zh=True)
def _cn_smtp(rng: random.Random) -> tuple[str, str]:
    qq = _digits(rng, 9)
    if rng.random() < 0.6:
        code = _s(rng, _LO, 16)
        text = rng.choice(
            [
                f"QQ邮箱 SMTP 授权码：{code}（不是QQ密码）",
                f"EMAIL_HOST = 'smtp.qq.com'\nEMAIL_HOST_USER = '{qq}@qq.com'\n"
                f"EMAIL_HOST_PASSWORD = '{code}'  # 授权码",
            ]
        )
    else:
        code = _s(rng, _UP, 16)
        text = f"163 邮箱客户端授权密码 {code}，Foxmail 里填这个"
    return code, text


@_kind("cn_account_password_pairs", zh=True)
def _cn_accounts(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice([_cn_pw(rng), _pw(rng, avoid="/")])
    phone = rng.choice(["13", "15", "18"]) + _s(rng, _DIG, 9)
    text = rng.choice(
        [
            f"12306 账号 {phone}，密码 {pw}",
            f"学信网：{rng.choice(_PINYIN)}@163.com / {pw}",
            f"公司 OA 登录：工号 {rng.randint(10000, 99999)}，密码 {pw}",
            f"个税 App 登录密码 {pw}",
            f"教务系统 学号 2021{_s(rng, _DIG, 6)} 密码：{pw}",
            f"用户让我记住：淘宝密码是{pw}",
        ]
    )
    return pw, text


@_kind("cn_router_admin", zh=True)
def _cn_router(rng: random.Random) -> tuple[str, str]:
    pw = rng.choice([_cn_pw(rng), _s(rng, _LODIG, 10)])
    text = rng.choice(
        [
            f"小米路由器后台 192.168.31.1，管理密码 {pw}",
            f"光猫超级管理员 telecomadmin 密码 {pw}",
            f"华为路由器 管理员密码：{pw}",
            f"OpenWrt root 密码 {pw}（LuCI 也是这个）",
        ]
    )
    return pw, text


@_kind("cn_nacos_properties", zh=True)
def _cn_nacos(rng: random.Random) -> tuple[str, str]:
    pw = _cn_pw(rng, avoid="\\")
    esc = pw.replace("=", "\\=").replace(":", "\\:")
    text = (
        "# bootstrap.properties（测试环境）\n"
        f"spring.cloud.nacos.config.server-addr={_private_ip(rng)}:8848\n"
        "spring.cloud.nacos.config.username=nacos\n"
        f"spring.cloud.nacos.config.password={esc}"
    )
    return esc, _fence(rng, text, "properties")


CHINESE: frozenset[str] = frozenset(_ZH)


# ===============================================================================================================
# private markers

TEXT_MARKERS: list[Callable[[str], str]] = [
    lambda s: f"[private] {s}",
    lambda s: f"[PRIVATE]{s}",
    lambda s: f"( Private ) {s}",
    lambda s: f"{{private}} {s}",
    lambda s: f"<private>{s}</private>",
    lambda s: f"<Private>\n{s}\n</Private>",
    lambda s: f"<!-- private -->\n{s}",
    lambda s: f"{s} <!--PRIVATE-->",
    lambda s: f"PRIVATE: {s}",
    lambda s: f"Private note - {s}",
    lambda s: f"{s} #private",
    lambda s: f"{s}\n\n#Private",
    lambda s: f"#private/personal {s}",
    lambda s: f"private:: true\n{s}",
    lambda s: f"{s} (private)",
    lambda s: f"[do not publish] {s}",
    lambda s: f"🔒 private: {s}",
    lambda s: f"【私密】{s}",
    lambda s: f"【 私密 】 {s}",
    lambda s: f"（隐私）{s}",
    lambda s: f"{s}（不公开）",
    lambda s: f"［私人］{s}",
    lambda s: f"｛私密｝{s}",
    lambda s: f"「机密」{s}",
    lambda s: f"『私密』{s}",
    lambda s: f"〔仅自己可见〕{s}",
    lambda s: f"〖隐私〗{s}",
    lambda s: f"〈私密〉{s}",
    lambda s: f"《不要公开》{s}",
    lambda s: f"私密：{s}",
    lambda s: f"{s}\n#私密",
    lambda s: f"<!-- 私密 -->{s}",
    lambda s: f"（PRIVATE）{s}",
    lambda s: f"［Private］ {s}",
]

FRONTMATTER_MARKERS: list[dict] = [
    {"private": True},
    {"private": "true"},
    {"Private": "yes"},
    {"visibility": "private"},
    {"visibility": "Private"},
    {"publish": False},
    {"publish": "no"},
    {"public": False},
    {"access": "private"},
    {"tags": ["journal", "private"]},
    {"tags": "private"},
    {"私密": True},
    {"可见性": "私密"},
    {"公开": False},
    {"visibility": "仅自己可见"},
    {"tags": ["日记", "隐私"]},
]

PERSONA_PRIVATE_HEADINGS: list[str] = [
    "## Private",
    "## Private notes",
    "### PRIVATE (do not share)",
    "# Private",
    "## 🔒 Private",
    "## [private] Personal details",
    "## 私密",
    "## 隐私信息",
    "### 个人隐私（不公开）",
    "## 私人笔记",
]

# ===============================================================================================================
# ordinary strings (must survive publishing unchanged)

ORDINARY: list[str] = [
    "The password is 12+ characters",
    "The PIN is 4-6 digits",
    "CI summary: pass: 118",
    "conda pin: python=3.11",
    "secret: optional",
    '{"commit": "9fceb02d0ae598e95dc970b74767f19372d61af8"}',
    "sha512-Lw7pVqJgxN4Aq0xhv5XKvPbOQGm3Ln5w2m2Qm3Xy6d3ZpQzv0m1KXyqF1y7m2J5f6T8l2w3e4r5t6y7u8i9o0pA==",
    "git clone git@github.com:psf/requests.git",
    "Python 3.11.7 on linux",
    "Released v2.14.0-rc.1 on 2024-03-15",
    "Meeting moved to 2024-03-15T09:30:00+08:00",
    "/usr/local/lib/python3.11/site-packages/requests/adapters.py",
    "sha256 of an empty file: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "md5('hello') = 5d41402abc4b2a76b9719d911017c592",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "Accent colour #1e90ff, hover rgb(30, 144, 255)",
    "See https://docs.python.org/3/library/secrets.html",
    "Dev server: http://localhost:8080/",
    "Bind to 0.0.0.0:8000 inside the container",
    "Public DNS resolvers: 1.1.1.1 and 8.8.8.8",
    "10.0.0.0/8, 172.16.0.0/12 and 192.168.0.0/16 are the private ranges from RFC 1918.",
    "ssh -i ~/.ssh/id_ed25519 deploy@example.com",
    "chmod 600 ~/.ssh/id_rsa",
    'ssh-keygen -t ed25519 -C "laptop"',
    "DB_PASSWORD=${DB_PASSWORD}",
    "password: changeme  # placeholder, replaced at deploy time",
    "api_key: <YOUR_API_KEY>",
    "token: ${{ secrets.NPM_TOKEN }}",
    "valueFrom: {secretKeyRef: {name: db-credentials, key: password}}",
    "Use `openssl rand -hex 32` to generate a new secret key.",
    "Rotate the API keys every 90 days.",
    "Set PGPASSWORD in the environment instead of passing -p on the command line.",
    "The ghp_ prefix marks a GitHub personal access token.",
    "AWS access key IDs start with AKIA.",
    "sk_test_ keys are Stripe test-mode keys.",
    "HTTP 401 means the bearer token is missing or expired.",
    "max_tokens: 4096",
    "RFC 7519 defines JSON Web Tokens.",
    "github.com ED25519 fingerprint SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
    "ISBN 978-0-13-110362-7",
    "CVE-2024-3094 (xz backdoor)",
    "docker compose up -d --build",
    "pip install -r requirements.txt",
    "kubectl get pods -n kube-system",
    "npm install --save-dev typescript@5.4.2",
    "git checkout -b feature/login-page",
    "commit 3f2a9c1 fixed the flaky test",
    "Build 20240315.4 passed on ubuntu-22.04",
    "Password reset links expire after 24 hours.",
    "A BIP-39 seed phrase has 12 or 24 words; never store it in plain text.",
    "Phone field format: +1-XXX-XXX-XXXX",
    "Default ports: SSH 22, HTTPS 443, PostgreSQL 5432, Redis 6379",
    "SELECT id, name FROM users WHERE active = true;",
    "Fibonacci: 1, 1, 2, 3, 5, 8, 13, 21, 34",
    "user@example.com is the placeholder address in the docs",
    "Timezone: Asia/Shanghai (UTC+8)",
    "密码长度至少 12 位，需包含大小写字母和数字",
    "请把 API Key 放到环境变量 OPENAI_API_KEY 里，不要写进代码",
    "验证码有效期为 5 分钟",
    "端口 5432 是 PostgreSQL 的默认端口",
    "身份证号是 18 位，最后一位可能是 X",
    "助记词一般是 12 或 24 个单词，千万不要截图",
    "WiFi 密码在路由器背面的标签上",
    "门禁卡丢了，去物业补办",
    "2024年3月15日 下午3点开会",
    "版本号 v1.2.3，发布于 2024-01-09",
    "密码: ******（已隐藏）",
    "token: 见 1Password 里的「生产环境」条目",
]
