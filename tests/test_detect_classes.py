"""Each class of the privacy gate's detectors on its own: what it must find (the whole value, to its natural end)
and what it must leave (ordinary technical text a wiki reader needs)."""

from __future__ import annotations

import pytest

from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.detect.context import ContextDetector
from memwiki.site.gate.detect.detectors import _views
from memwiki.site.gate.detect.hosts import HostDetector
from memwiki.site.gate.detect.personal import PersonalDetector
from memwiki.site.gate.detect.providers import ProviderDetector
from memwiki.site.gate.detect.shapes import ShapeDetector, made


def found(detector: object, text: str) -> list[str]:
    return [text[s.start : s.end] for s in detector.find(text)]  # type: ignore[attr-defined]


def redacted(text: str) -> str:
    return Detectors().redact(text, lambda kind, secret: "[R]")[0]


# (text, the secret that must go whole)
CONTEXT = [
    # a code said in the past tense, in groups of digits: "was" says as much as "is"
    ("The hub's HomeKit sticker fell off; the setup code was 141-75-636, pair again from scratch.", "141-75-636"),
    # round 12 (a household, a shop, an SRE on call), by class: a label and its value with a bracketed aside between,
    # a value on its own line that the next line points up at, a value restated after its description
    (
        "VAULT_TOKEN（给 CI 用的，别给人）：「0f3c2a91-77de-4b1e-9a0c-5d2e8f6b1c34」",
        "0f3c2a91-77de-4b1e-9a0c-5d2e8f6b1c34",
    ),
    ("SMTP 授权码（不是登录密码）qkzmwtrbvnhdpsla。", "qkzmwtrbvnhdpsla"),
    ("mosquitto 账号 homebridge，密码「$kR7vTq2LmZ9x」", "$kR7vTq2LmZ9x"),  # (a password that opens with `$`)
    (
        "Turn 12: 7d1e0c44-2b9a-4f0e-8c31-6a5b9e2f0d17 ^ that one, the admin token",
        "7d1e0c44-2b9a-4f0e-8c31-6a5b9e2f0d17",
    ),
    (
        "b7e2c9d4-5a1f-4e3b-8c6d-2f9a0e1b7c53\n\n^ keep this one, the bootstrap token of the cluster",
        "b7e2c9d4-5a1f-4e3b",
    ),
    ("门禁密码还是老规矩：女儿生日加楼层，也就是 2016081214。", "2016081214"),
    # round 11 (a lab, an accounting office, a game studio), by class: a signing tool's and an app's password flag, an
    # XML string named as a secret, a CLI's login token, a licence serial flag, a link that is its own key, a
    # password made of a word and digits beside a word of logging in, an account/password pair after a colon, a value
    # before its arrow, one said to be on the next line
    ('signtool sign /f codesign-2026.pfx /p "WXk8K3aytH#" /fd SHA256', "WXk8K3aytH#"),
    ("xcrun altool --upload-app -f Tiny.ipa -u dev@studio.example -p vcjk-nlya-zxym-cuob", "vcjk-nlya-zxym-cuob"),
    ('<string name="server_client_secret" translatable="false">lIYqsyZXh96bE#3</string>', "lIYqsyZXh96bE#3"),
    ("wandb login 734f8f31b36916668115bb12fe8f830d5dad2dde", "734f8f31b36916668115bb12fe8f830d5dad2dde"),
    ("Unity -batchmode -serial F4-ZKVI-68F5-SS0Y-VPFS-M5U2 -quit", "F4-ZKVI-68F5-SS0Y-VPFS-M5U2"),
    ("Closed beta, don't post publicly: https://testflight.apple.com/join/HPooWzU4", "HPooWzU4"),
    (
        "Overleaf edit link (anyone holding it can edit): https://www.overleaf.com/7239326470janguvadvvvj",
        "7239326470janguvadvvvj",
    ),
    ("the old Mac in the microscopy room still opens with letmein398, same as the printer", "letmein398"),
    ("Speaker 1: so it's Guoqiang@1991, capital first letter.", "Guoqiang@1991"),
    ("【语音转文字】喂，那个服务器密码你记一下啊，是coffee123!，对，前面大写", "coffee123!"),
    ("打印机管理页面 admin zhoujie123", "zhoujie123"),
    ("用友畅捷通 T+：manager/pkNuHYAWW+8", "pkNuHYAWW+8"),
    ("Steam 合作伙伴后台：bu7202 / sunhao0905", "sunhao0905"),
    ("hplc@906 ← 质谱工作站管理员密码，贴纸掉了记在这", "hplc@906"),
    ("NAS 管理员\n账号：admin\n密码在下一行\n\nah2HXgHsu2%1\n\n（别存浏览器）", "ah2HXgHsu2%1"),
    (
        "Co-authors edit here -> https://www.overleaf.com/9924144321zsrkoyhbdzny (this one isn't)",
        "9924144321zsrkoyhbdzny",
    ),
    ("TestFlight invite for the Discord mods only -> testflight.apple.com/join/y24XWCyk", "y24XWCyk"),
    ("会议室电脑就是 zhangwei123，大家都知道", "zhangwei123"),
    ("Dana logs into the plate reader PC as 'lab' with Summer2015; everyone knows it", "Summer2015"),
    ("/etc/rsyncd.secrets backup:lantern$olive61", "lantern$olive61"),
    (
        "Offsite drive: the LUKS passphrase is at the very bottom of this note.\n\nSwapped two disks.\n\n"
        "→ anchor-willow-falcon-canyon-zebra",
        "anchor-willow-falcon-canyon-zebra",
    ),
    ("WiFi 密码写在最后。\n\n买了两块硬盘。\n\nyueliang laohu kuaile1", "yueliang laohu kuaile1"),
    ("timber!copper03 —— 这是有赞微商城的登录密码", "timber!copper03"),
    ("k8s 里 nextcloud 的 Secret（stringData）db-password 写的是 jasmine!thunder21", "jasmine!thunder21"),
    ("my password is eWxA!NZ8r;q,2 for the NAS", "eWxA!NZ8r;q,2"),
    ("WiFi密码是 7HZ;8cQ#x9，别告诉别人", "7HZ;8cQ#x9"),
    ('{"args": "{\\"MYSQL_ROOT_PASSWORD\\": \\"CxCW8kq!2z\\"}"}', "CxCW8kq!2z"),
    ("mysql -uroot -pS3cr3t!x db", "S3cr3t!x"),
    ("sshpass -p 'hunter2 xyz' ssh pi@nas", "hunter2 xyz"),
    ("docker login -u bob -p Tr0ub4dor registry.example.com", "Tr0ub4dor"),
    ("curl -u admin:Sup3r#pw https://api.example.com", "Sup3r#pw"),
    (
        "https://a.example.com/login?next=https%3A%2F%2Fb.example.com%2Fcb%3Frefresh_token%3DAbCdEf123456%26x%3D1",
        "AbCdEf123456",
    ),
    ("WIFI:S:HomeNet;T:WPA;P:pa55w0rd!x;;", "pa55w0rd!x"),
    ("set password to Tr0ub4dor&3 please", "Tr0ub4dor&3"),
    ("我把密码改成 xK9#mm2Lq 了", "xK9#mm2Lq"),
    ("The Grafana password got reset, it's now Maple1173*", "Maple1173*"),
    ("door code 4821#", "4821#"),
    ("passphrase: correct horse battery staple", "correct horse battery staple"),
    ("redis-cli -a Ili9RkFYb23s57r 登录后执行", "Ili9RkFYb23s57r"),
    ("requirepass 0Xks3KQlQb", "0Xks3KQlQb"),
    ("machine example.com login bob password s3cr3tPW", "s3cr3tPW"),
    ("db.example.com:5432:app:bob:pgPa55word", "pgPa55word"),
    ("| service | user | password |\n|---|---|---|\n| nas | admin | Pa55word! |", "Pa55word!"),
    ("G-577376 is your Google verification code.", "G-577376"),
    ("客人来了告诉他们 wifi 密码 meadow saffron staple 94", "meadow saffron staple 94"),
    ('export API_KEY="sk-cfb7c44a4b1110d941\\\n8a242157440cbe"', "sk-cfb7c44a4b1110d941\\\n8a242157440cbe"),
    ("Google recovery codes:\n- FNPB-UQAL-BMPZ\n- U9JS-W5TP-N4VA\n- OAR2-XBGB-EAIO", "OAR2-XBGB-EAIO"),
    ("TOTP secret (in case I lose my phone): ME6TVXTJFHGVBNKP", "ME6TVXTJFHGVBNKP"),
    # said of a door, a safe or a lock: codes and combinations
    ("Building front door: key in #487427 then wait for the buzz", "#487427"),
    ("Dad's gun safe: right 91, left 64, right 88.", "right 91, left 64, right 88"),
    ("Safe under the desk: R 70 – L 86 – R 99", "R 70 – L 86 – R 99"),
    ("Key box at the cabin: 8 9 6 3 0 3", "8 9 6 3 0 3"),
    ("财务室保险柜：左转 35 右转 52 左转 73，再拧把手", "左转 35 右转 52 左转 73"),
    ("微信支付密码跟门锁一样，都是 591222", "591222"),
    # an account, a slash, its password
    ("the router creds → anna.k / Snowy,1979&", "Snowy,1979&"),
    ("学信网：wangfang@163.com / 3y7CBd&aKkGI+XT1O", "3y7CBd&aKkGI+XT1O"),
    # commands and config files
    ("htpasswd -b -c /etc/nginx/.htpasswd admin 'N1mbus!24otter'", "N1mbus!24otter"),
    ("unrar x -pwalrus@dragon%94 photos.rar", "walrus@dragon%94"),
    ("ldapsearch -x -H ldaps://ldap -D 'cn=admin' -w 'harbor@1988#' -b dc=corp", "harbor@1988#"),
    (
        "gh secret set ALGOLIA_ADMIN_API_KEY --body '5c5eb658f0f185d083a7335c14b57c8e'",
        "5c5eb658f0f185d083a7335c14b57c8e",
    ),
    ("account default\nhost smtp.migadu.com\npassword 2dWy3D@q69uM?PLzI", "2dWy3D@q69uM?PLzI"),
    ('password: &db_pw "GIN.tango;57*"', "GIN.tango;57*"),
    ("password: \"{{ 'Nimbus~cobalt-72' | password_hash('sha512') }}\"", "Nimbus~cobalt-72"),
    ('variable "db_password" {\n  type = string\n  default = "COB^tango.43*"\n}', "COB^tango.43*"),
    ('<add key="ClearTextPassword" value="otter(85)lemon." />', "otter(85)lemon."),
    ('export API_KEY=\\"2487cbf9a50e2b80764d1056\\" && ./sync.sh', "2487cbf9a50e2b80764d1056"),
    ('API_KEY = (\n    "sntryu_cc33e3cc1233d1150"\n    "19bd69f9629c482a9258a5b8"\n)', "19bd69f9629c482a9258a5b8"),
    ("Guest wifi is Cafe-5G, password 04UJZyR0!;mo3s (yes, with the comma)", "04UJZyR0!;mo3s"),
    ("bash az login -u bob -p 'biscuit@$Bluebird2020'", "biscuit@$Bluebird2020"),
    ("Google backup codes (each works once): 7461 1340 6156 6130 1217 5551", "7461 1340 6156 6130 1217 5551"),
    ('network={\n    ssid="Hendersons"\n    psk="p4hyn9pcux13"\n}', "p4hyn9pcux13"),
    ("the staging admin → user anna, pass **juniper11=rocket**", "juniper11=rocket"),
    ("私钥的 passphrase 是 处处闻啼鸟 海内存知己 2013", "处处闻啼鸟 海内存知己 2013"),
    ("Mum's iPad unlocks with the same thing as my laptop (QZgq6HEucxzO5Lr) so she can", "QZgq6HEucxzO5Lr"),
    ("[pitfall] h23 Guest wifi is Cafe-5G, password ywbM,Ckj2;M (yes)", "ywbM,Ckj2;M"),
    (
        "[pitfall] h21 | service | user | password |\n| --- | --- |\n| grafana | admin | ADdpPI!8=X1x5r |",
        "ADdpPI!8=X1x5r",
    ),
    ("entity · | 系统 | 账号 | 密码 | | --- | --- | --- | | 财务系统 | zhangsan | 6gc#=pS51cqe |", "6gc#=pS51cqe"),
    ('{"output": "| service | password |\\n| --- | --- |\\n| grafana | B=flEzSGh4J=I |"}', "B=flEzSGh4J=I"),
    ("SSID MyHome_5G, key yangyang@2010", "yangyang@2010"),
    ("老妈的 Apple ID 密码是她名字拼音加生日：zhouhao19560312", "zhouhao19560312"),
    ("测试环境 token 先写死在这：0EFA50B862C3DE64ABDB8729DE9D6C68DC2BC6AC", "0EFA50B862C3DE64ABDB8729DE9D6C68DC2BC6AC"),
    ("MongoDB 管理员 admin 密码「Snowy;tiger@66」", "Snowy;tiger@66"),
    ("added to ~/.pgpass: db.prod:5432:*:postgres:7vWoZks?a4fy,c", "7vWoZks?a4fy,c"),
    ("https://api.example.org/weather?q=Berlin&appid=3m9r73g51lqsucs4vkh27r5h95s34cyn&units=metric", "3m9r73g51lqs"),
    ("飞书机器人：https://open.feishu.cn/open-apis/bot/v2/hook/e216fe6d-39fc-40c3-aec3-b9e1d89c4c03", "e216fe6d-39fc"),
    ("jdbc:oracle:thin:scott/Coffee%1984#@//db.example.org:1521/ORCL", "Coffee%1984#"),
    # round 5: a code read out digit by digit, a PUK, values in a command's or a message's own place
    ("remind me the new debit card pin is 2 7 1 0 7 1 dont forget", "2 7 1 0 7 1"),
    ("PUK for the spare SIM is 13495925 (the PIN got locked)", "13495925"),
    ("echo 'cvsroo&HQjSng*' | docker login registry.gitlab.com -u bot --password-stdin", "cvsroo&HQjSng*"),
    ('sql.Open("mysql", "app:zhangweiGP.7700@tcp(mysql-primary:3306)/shop")', "zhangweiGP.7700"),
    ("net use Z: \\\\fs\\scans /user:CORP\\jdoe laddmo&TrXfaC& /persistent:yes", "laddmo&TrXfaC&"),
    ('$pw = ConvertTo-SecureString "Velvet8920&bNJ" -AsPlainText -Force', "Velvet8920&bNJ"),
    ("刚收到短信“G-392822 是您的 Google 验证码”", "G-392822"),
    ("您的包裹已到站，凭8-6-0466到3号楼底商取件。", "8-6-0466"),
    ("an app-specific password for iCloud mail (ufny-pvuh-ilpg-vwlg), the normal one fails", "ufny-pvuh-ilpg-vwlg"),
    # round 6: an answer to a question for a credential, a value far from its word, codes of locks and safes
    ("[微信] 老妈：家里 wifi 密码是多少来着？\n我：Ember4884*LBi 注意大小写", "Ember4884*LBi"),
    ("User: remind me the VPN password\nAssistant: You told me on Tuesday it is WYZM9701rsvj*.", "WYZM9701rsvj*"),
    ("wifi密码多少？ —— wangfang_17169OX （TP-LINK_5G_9494）", "wangfang_17169OX"),
    (
        "master passphrase — not the hint, the real thing: meadow-walnut-pixel-copper-tundra0",
        "meadow-walnut-pixel-copper-tundra0",
    ),
    ("grandma's iPad uses biscuit-rocket-pelican11 as its password now", "biscuit-rocket-pelican11"),
    ("fyi pass for grandma's iPad = IHXW7469pjqf@", "IHXW7469pjqf@"),
    ("the U-lock in the shed opens with 9-4-4-7-5-4", "9-4-4-7-5-4"),
    ("hotel-room safe, I set it to 19-47-19-83 so I don't forget", "19-47-19-83"),
    ("接头暗号：tianwang-feiyu5615，对上了再开门", "tianwang-feiyu5615"),
    ("交易密码设成了11026297，别告诉别人", "11026297"),
    ("网银支付密码和登录密码都用 SFJG7560naie-", "SFJG7560naie-"),
    ("电信光猫超级管理员账号 telecomadmin，超级密码 %cROKDqx，改桥接要用", "%cROKDqx"),
    ("mongosh --host db1 -u admin -p wangfang.1829Gnd --authenticationDatabase admin", "wangfang.1829Gnd"),
    ("router panel — u=ops p=PTTD4896shcn*", "PTTD4896shcn*"),
    ("腾讯云短信 SDK AppKey：84b0698db6b9c6c55bd43b160799ddee", "84b0698db6b9c6c55bd43b160799ddee"),
    ("七牛云存储 SK：P9Xe0kizybpoSCDbaQsKuMdUrDmhRhyNP_rQbomJ", "P9Xe0kizybpoSCDbaQsKuMdUrDmhRhyNP_rQbomJ"),
    ("连 Redis 之后先执行 AUTH GYRgcbCeAyzaPbzVXmUX，不然报 NOAUTH", "GYRgcbCeAyzaPbzVXmUX"),
    (
        "ledger recovery words, in order: dinosaur village voyage pilot dolphin walnut obey tiger",
        "dinosaur village voyage pilot dolphin walnut obey tiger",
    ),
    ("User: the 2FA code it just sent is 910 578, quick, log in for me", "910 578"),
    # round 2 and 4 again: what opens a thing, said by likeness; a passphrase of Chinese words; codes in a list
    ("Mum's iPad unlocks with the same thing as my laptop (!mh82N^9-2F) so she can install apps", "!mh82N^9-2F"),
    ("1Password 主密码 = 欲穷千里目 海内存知己 1996（包括空格）", "欲穷千里目 海内存知己 1996"),
    ("Discord backup codes: ``` * 1cv9-89ev * usqh-byi4 * dpd8-u1u0 * 7736-64g4 ```", "7736-64g4"),
    (
        'Page c1910 API_KEY = ( "ef4d4b9b7f9b69ec57afe583d1d429b01fb8" "6ab04df711dbf14e7331725e4985" )',
        "6ab04df711dbf14e",
    ),
    (
        "therapy call: https://us06web.zoom.us/j/38009414325?pwd=Zh1pDULZogDk7AyVy",
        "https://us06web.zoom.us/j/38009414325?pwd=Zh1pDULZogDk7AyVy",
    ),
    # round 7 (blind): a gift card's secret, a plaintext, what the value is like before it, quoted words on, a
    # form's bracketed label, `pw`, Gradle's quoted credentials, an alphanumeric PIN, a sign-in code
    ("京东 E 卡：卡号 JDV8529315549663402，卡密 GDQM-FTIZ-DOMH-Y59Q，还没绑定", "GDQM-FTIZ-DOMH-Y59Q"),
    (".htpasswd 里只有一行，明文是 mengmeng=120140，记这儿", "mengmeng=120140"),
    ("工作室 Wi-Fi 名 studio_g9bc，密码就是八位数字 41605574，访客网络另说", "41605574"),
    ("币安资金密码（6 位数字）000319，提币要用", "000319"),
    ("内网 wiki 的密码居然支持中文，我设的是「好好学习天天向上6710」", "好好学习天天向上6710"),
    ("【账号】admin【密码】ember-falcon-cobalt22【地址】书房", "ember-falcon-cobalt22"),
    ("globalprotect portal: user jdoe, pw wangcai+561661, mfa via push", "wangcai+561661"),
    ("signingConfigs {\n  release {\n    storePassword 'falcon-tundra-prism31'\n", "falcon-tundra-prism31"),
    ("Signal PIN (alphanumeric, registration lock is on): xi94igxo", "xi94igxo"),
    ("Your confirmation code is 6YJ-TSY. Enter it in your browser window", "6YJ-TSY"),
    ("echo 'db.corp.internal:5432:analytics:etl:Winter6518.' >> ~/.pgpass", "Winter6518."),
    ("kubectl get secret grafana -o jsonpath={.data.admin-password} | base64 -d\nwoaini!641659", "woaini!641659"),
    (
        "2026-12-02T09:14:11Z ##[debug]Evaluating: secrets.REGISTRY_PASSWORD\n"
        "2026-12-02T09:14:11Z ##[debug]=> 'Saffron7166!'",
        "Saffron7166!",
    ),
    ("In [7]: os.environ[\"WANDB_API_KEY\"]\nOut[7]: '6b1282d95936a8c2b652098dfc88ded77f948b97'", "6b1282d95936a8c2"),
    ("[elastic] user successfully reset. New value: CjG_D+rDZxpUc=NZl=ir", "CjG_D+rDZxpUc=NZl=ir"),
    # round 8 (blind): a device config's type digit, `net use`, the answer to a security question, a footnote's
    # `user / password`, a password after its word and a space, Chinese words for it (mm, 账密, 密匙), spaced
    # characters, a code list after words, a proxy's UUID, a password said to be the account's name
    ("username netadmin privilege 15 password 7 03E80A9C222670BBE4F4", "03E80A9C222670BBE4F4"),
    ("snmp-server community gzgsyebann-ro RO 10", "gzgsyebann-ro"),
    (r"net use Z: \\fs01\finance x1-BQHbUs4sN /user:CORP\henrik /persistent:yes", "x1-BQHbUs4sN"),
    ("bank security question 'first pet' — the random answer I gave: announce album 9825", "announce album 9825"),
    ("Deploys go through the jump box[^1].\n\n[^1]: ops / k%M9FAcVVqb16V", "k%M9FAcVVqb16V"),
    ("TeamViewer ID 263 720 658, password 9m26mi0y (he never changes it)", "9m26mi0y"),
    ("公司 vpn mm：eAmixcAfY?9e，每 90 天强制改一次", "eAmixcAfY?9e"),
    ("堡垒机账密 ops_zhoujing / gp9xNSXFt+Dyuc", "gp9xNSXFt+Dyuc"),
    ("OA 系统新员工初始密码统一为 hWw0!!d7yz，首次登录后强制修改。", "hWw0!!d7yz"),
    ("对接方给的加密密匙：b4ea410fb9102f29a422eb14ab2f2d0f（AES-128 ECB）", "b4ea410fb9102f29a422eb14ab2f2d0f"),
    ("GitHub 恢复码（github-recovery-codes.txt 的内容）：\nbe7d5-d5a48\nb83fe-2906d\n62e61-df59a", "b83fe-2906d"),
    ("Backup codes for diego.h@gmail.com (each can be used once):\n1. 8157 1249\n2. 1191 2396", "1191 2396"),
    ('vmess config: {"clients":[{"id":"244caf9c-4dab-4481-b253-edc618187993","alterId":0}]}', "244caf9c-4dab"),
    ("测试环境账号 qa_wangwei1339，密码同账号名（老习惯了）", "qa_wangwei1339"),
    # round 9 (blind): a password typed as people make one, in a paragraph about a password or a login, before
    # or after the word; command lines that take it in their own place
    ("Roshai#5446KYT# 这个是公司 VPN 的新密码，上周五强制改的", "Roshai#5446KYT#"),
    ("bello.Brihai.1990SS — that's the new root password for the Hetzner box", "bello.Brihai.1990SS"),
    ("okay so um the wifi at mum's place is uh Rosfenqin7295=fal yeah that's it", "Rosfenqin7295=fal"),
    ("obclient -h10.241.108.123 -P2881 -uroot@sys -p'Gukes!7697CTH#' -Doceanbase -A", "Gukes!7697CTH#"),
    ("security add-generic-password -a \"$USER\" -s home-wifi -w 'tamfal.Haihai.1998OV'", "tamfal.Haihai.1998OV"),
    ("x11vnc -storepasswd irC28EbW ~/.vnc/passwd", "irC28EbW"),
    ("poetry config http-basic.lansol ci-bot 'Yorvaspei10-hai'", "Yorvaspei10-hai"),
    ("达梦数据库：disql SYSDBA/nxpEomT~dzEmCFM442@10.246.173.148:5236", "nxpEomT~dzEmCFM442"),
    ("local-user admin password irreversible-cipher IV6oBCbq.kf26", "IV6oBCbq.kf26"),
    ("roshai#5446kyt#_这个是公司_vpn_的新密码", "roshai#5446kyt#"),  # a graph's predicate, lower-cased and joined
    ('v2ray 的 config.json：\n"clients": [{"id": "989358a7-30d4-46da-a766-df4df18e6e29"}]', "989358a7-30d4"),
    # short codes said right after their name, or a lock's combination after a separator
    ("Visa ending 4019, exp 02/30, CVV 538", "538"),
    ("卡背后三位数是 787", "787"),
    ("security code on the back: 470", "470"),
    ("the luggage lock is 792", "792"),
    ("parental controls code 8096", "8096"),
    ("SIM PIN is now 9075", "9075"),
    # Chinese verbs of a change, English credential words in a Chinese sentence
    ("喵星球宠物:运营9 的密码重置成 xiaomao1986@ 了", "xiaomao1986@"),
    ("Proxmox 的 root pw 是 Chuntian-Feiji68，backup 用同一个", "Chuntian-Feiji68"),
    # a key named by a compound word, in a Markdown table; a webhook's id
    (
        "| 聚水潭 | 值 |\n|---|---|\n| partnerkey | 022238daceee2092f073ff80b9465aef |",
        "022238daceee2092f073ff80b9465aef",
    ),
    ("飞书 webhook 的 hook id：102f29a4-22eb-44ab-af2d-0f0cc022238d（发货提醒群）", "102f29a4-22eb-44ab"),
    # where a command or a file puts it: `-u NAME -P X`, `NAME@HOST:X`, any Authorization scheme
    ("mosquitto_pub -h 10.0.0.2 -u iot -P 'chuntian1979&' -t home/door -m open", "chuntian1979&"),
    ("[smtpdm.aliyun.com]:465 shop@mail.example.cn:Orbittva9AW", "Orbittva9AW"),
    ('curl -H "Authorization: GenieKey d28a7902-3c39-4200-861f-ccd268a29a0d" https://api.example', "d28a7902-3c39"),
    # a share link with its extraction code: the link's id opens it too
    ("阿里云盘 分享 https://www.alipan.com/s/tbxAk7jqevt 提取码 avet", "tbxAk7jqevt"),
    # the answer in the next turn of a chat, after a time stamp
    (
        "[19:28] Sam: what's the NAS admin pass again? the photo app logged me out\n[12:39] me: 75$yx$8xm5Msl??\n",
        "75$yx$8xm5Msl",
    ),
]
SHAPES = [
    # round 12: a Zigbee network key as 16 bytes, a Z-Wave key in capital hex in a table
    ("network_key: [12, 201, 33, 140, 7, 250, 96, 181, 44, 19, 230, 75, 162, 3, 118, 209]", "[12, 201, 33"),
    ("| S2_Authenticated | 9C41E07B2D5F38A61B0C4E97D2F5A803 |", "9C41E07B2D5F38A61B0C4E97D2F5A803"),
    ("登录用「Xk29!vQ#pLm7」就行", "Xk29!vQ#pLm7"),
    ("[18:45] 我: 后半段 b3be6c60ca0d367e8a299310", "b3be6c60ca0d367e8a299310"),  # a session key's second half
    ("key on two lines: sk-ant-api03-AbCdEf1234567890GhIjKl\nQrStUv0987654321wxYZ", "QrStUv0987654321wxYZ"),
    ("hvs.CAESIJ8Q1x7kq9Zs3Vd2Lw0pN4mRtY is the vault token", "hvs.CAESIJ8Q1x7kq9Zs3Vd2Lw0pN4mRtY"),
    ("discord_bot_token_mtycupklmjqymzq4odkxmtyzmw.gx4h2c.ab12cd34", "mtycupklmjqymzq4odkxmtyzmw"),
    ("client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB", "LS0tLS1CRUdJTiBSU0E"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIFxk3oZ\nPrivate-MAC: 8f3a", "AAAAIFxk3oZ"),
    ("Typed '8ECa(#!LRGfHp' into the prompt", "8ECa(#!LRGfHp"),
    ("AKIAIOSFODNN7EXAMPLF / FNmxajVoewYBzVCMojs23VclaUsTeW+GIKEyKywn (the terraform user)", "FNmxajVoewYBzVCMojs23"),
    ("pred pasted brx-prod-sgxeqishngubneobepuewk20qepusuc32vwk1rmn into the runner", "sgxeqishngubneobepuewk20"),
    ("export:_-----begin_pgp_private_key_block-----_lqoybgmj4vzcmlu1q2skmpx3viahin_-----end_pgp", "lqoybgmj4vzcmlu1"),
    ("lines:_private-lines:_1_keytolx0hatbmmg+ocd6kkftpy98vxypmsg9f_private-mac:_f711d35d", "keytolx0hatbmmg"),
    ("~/.config/solana/id.json:\n[" + ",".join(str((i * 37) % 256) for i in range(64)) + "]", "37,74,111"),
    ("Win11 Pro retail key from the box: QTFV6-QBV99-M4F46-HFKKQ-6GX2P", "QTFV6-QBV99-M4F46-HFKKQ-6GX2P"),
    ("BitLocker recovery key: 391809-198253-384865-486682-332258-234576-096201-547804", "391809-198253-384865"),
    ("Matrix Security Key: Es6W XMiy TWAE qDN1 6deo hfNf X881 MM49 jMTW Dzwi 9yM1 pCaF", "Es6W XMiy TWAE qDN1"),
    (
        "touched the yubikey: cccccckvblevbfudujntetjvvvehcvrefhhdivnnkhlg",
        "cccccckvblevbfudujntetjvvvehcvrefhhdivnnkhlg",
    ),
    (
        "硅基流动的 key：sk-oyxgmbynapuenqijkjqfgmdoydolkcgjmcggnhfmydsjhpbi，openai 兼容",
        "sk-oyxgmbynapuenqijkjqfgmdoydolkcgjmcggn",
    ),
    # round 8 (blind): a secret read out in the phonetic alphabet, an app password of four letters four times, a
    # hex key named a few words before it
    ("so the NAS one is two india xray golf charlie india five november, all lower case", "xray golf charlie"),
    ("the voice memo: two niner three two six mike lima six four, got it?", "niner three two six mike"),
    ("Thunderbird wants the 16-letter one, not the login: cava ggbp mwmn csug", "cava ggbp mwmn csug"),
    ("config/master.key for the billing app (only on my laptop): b4ea410fb9102f29a422eb14ab2f2d0f", "b4ea410fb9102f29"),
    ("-H 'cookie: theme=dark; _admin_session=80b9465aef7ac86d66c7a644fb12853ef86dcfae; tz=UTC'", "80b9465aef7ac86d"),
]
PERSONAL = [
    # round 12: a passport's number on a list under the word, a social security card's number after an aside, health
    # said by a test, a stage, a treatment
    ("Visa form wants passport numbers.\nMei Lin: E30419962, Tom Lin: E30419985", "E30419985"),
    ("他的社会保障卡（医保卡）卡号 K20815537，年底续费", "K20815537"),
    ("Noah Price tested positive for tuberculosis last week", "tuberculosis"),
    ("Grandad has stage 3 bladder cancer, appointments on Mondays", "stage 3 bladder cancer"),
    ("Priya is on sertraline for generalised anxiety", "sertraline for generalised anxiety"),
    ("Olive Brandt was diagnosed with coeliac disease in May", "Olive Brandt was diagnosed"),  # (said of her)
    ("外婆HIV 阳性，按时服药", "HIV 阳性"),
    # round 11: a researcher's ORCID (by its check digit), an id written right after its word or in capitals only,
    # a company's unified social credit code by its word
    ("Fellowship form needs Chloe Kowalski's ORCID iD — 0000-0003-1217-2670.", "0000-0003-1217-2670"),
    ("孙曦超的社保卡卡号U51371290，补缴要用", "U51371290"),
    ("卢超轩的港澳通行证：CFOGWJSWC，去香港开会订票用", "CFOGWJSWC"),
    ("客户苏州鼎信建材有限公司，统一社会信用代码91320102188769822N，小规模纳税人", "91320102188769822N"),
    ("93370202352097918K（深圳远山文化传媒有限公司的税号，开专票用）", "93370202352097918K"),
    ("| 姓名 | 学号 | 期末 | 总评 |\n|---|---|---|---|\n| 姚峰晨 | 2025777543 | 38 | 72 |", "2025777543"),
    ("Talk h93 港澳通行证 CFVUFRNXF（程曦霞）", "CFVUFRNXF"),
    ("[pitfall] h72 | 姓名 | 学号 | 期末 | 总评 |\n|---|---|---|---|\n| 蒋红辉 | 2024278365 | 44 | 59 |", "2024278365"),
    ("call me at 1-415-555-2671 tomorrow", "1-415-555-2671"),
    # round 10, second pass: an account number beside its bank; health (a diagnosis, a lab result, a dose)
    ("开户行及账号：招商银行深圳科技园支行 121998259791907", "121998259791907"),
    ("| 招商银行杭州滨江支行 | 1219 7887 6232 860 |", "1219 7887 6232 860"),
    ("黄晓东确诊高血压三级，下周一复查，别跟外人说", "高血压三级"),
    ("health notes — Grace Wu: stage 2 hypertension (diagnosed in 2024)", "stage 2 hypertension"),
    ("爸爸这次糖化血红蛋白 9.8%，医生说要加药", "糖化血红蛋白 9.8%"),
    ("Grace Wu: type 2 diabetes, started medication metformin 500 mg", "metformin 500 mg"),
    ("Grace Wu: type 2 diabetes, started medication metformin 500 mg", "type 2 diabetes"),
    ("my dad was diagnosed with atrial fibrillation last spring", "atrial fibrillation"),
    ("| 孩子 | 生日 |\n|---|---|\n| 朱欣怡 | 2016-04-13 |", "2016-04-13"),
    ("小儿子陈语嫣（2021.2.25），今年报名小学", "2021.2.25"),
    ("180.7836.1631 是我爸的手机号", "180.7836.1631"),
    ("支付宝收款码 https://qr.alipay.com/fkx84681quo6sbegzgsyeb 打印在收银台", "qr.alipay.com/fkx84681quo6sbegzgsyeb"),
    ("小区门禁 IC 卡 UID：AE679F02", "AE679F02"),
    (
        "Our address for the visa form: Room 2503, Building 9, No. 763 Chunhui Road, Hangzhou 310096",
        "Room 2503, Building 9, No. 763 Chunhui Road, Hangzhou 310096",
    ),
    ("home address: Flat 24E, 10/F, 48 Waterloo Road, Hong Kong", "10/F, 48 Waterloo Road, Hong Kong"),
    # round 10: a policy's number, an access card's id, a Singapore identity card, an id word as a JSON key
    ("郭欣怡的医疗险保单：857195406135895254，受益人是我", "857195406135895254"),
    ("门禁卡卡号 F7C3706D（复制到手环用的）", "F7C3706D"),
    ("Singapore IC: S6426212B", "S6426212B"),
    ('{"name": "Muyang Huang", "passport": "EJ0110843", "dob": "1987-05-14"}', "EJ0110843"),
    ("UK mobile 07911 123456", "07911 123456"),
    ("手机 138 1234 5678", "138 1234 5678"),
    ("IBAN DE62 3704 0044 0532 0130 01", "DE62 3704 0044 0532 0130 01"),
    ("身份证 11010519491231002X 复印件", "11010519491231002X"),
    ("mail alice.wu [at] example [dot] com", "alice.wu [at] example [dot] com"),
    ("微信号：lin_wei_2024", "lin_wei_2024"),
    ("我的QQ是 123456789", "123456789"),
    ("passport E12345678", "E12345678"),
    ("seed: abandon ability able about above absent absorb abstract absurd abuse access accident", "absurd abuse"),
    ("I live at 221B Baker Street, London", "221B Baker Street"),
    ("我家地址：北京市朝阳区科技园南路854号锦绣家园21栋6单元1603室", "科技园南路854号"),
    ("乘车人 王秀兰 330106196112253721", "330106196112253721"),  # a county code stdnum does not list
    ("快递员电话 148 5361 6444，下午才送", "148 5361 6444"),
    ("房东林峰电话18106803027，每月5号前交房租", "18106803027"),
    ("Direct deposit: routing 128444344, account 8350558798", "8350558798"),
    ("BSN: 612874448 (voor de huurovereenkomst)", "612874448"),
    ("HKID E026572(5)", "E026572"),
    ("NI number (for the payroll form): XA 10 54 88 C", "XA 10 54 88 C"),
    ("my car reg is RW53 PDM for the parking permit", "RW53 PDM"),
    ("我的车牌 苏B·FCM0Z，停 B2 层", "苏B·FCM0Z"),
    ("绿泡泡 hugmh1202", "hugmh1202"),
    ("企鹅号：29440522", "29440522"),
    ("Skype live:.cid.495195e3ec24c42b", "live:.cid.495195e3ec24c42b"),
    ("contact → sofia.novak@posteo[.]de", "sofia.novak@posteo[.]de"),
    ("有事发邮件 tangjie1141 艾特 126 点 com", "tangjie1141 艾特 126 点 com"),
    ("助记词（千万别截图）：币粒消仿室演赛节凯吐够腔", "币粒消仿室演赛节凯吐够腔"),  # BIP-39, Chinese, written together
    ("Oma wohnt jetzt in der Am Park 13, 12901 Berlin", "Am Park 13, 12901 Berlin"),
    ("香港身份證號碼：H203220(3)", "H203220"),
    ("助记词：1.呆 2.偏 3.冻 4.南 5.裁 6.性 7.获 8.云 9.厘 10.佛 11.哭 12.调", "8.云 9.厘"),
    # lower-cased and `_`-joined as a graph's predicate is: the same classes still apply
    ("pred rent goes to de66 1769 0584 3411 7096 91 (sparkasse)", "de66 1769 0584 3411 7096 91"),
    ("pred ship the monitor to 4204 linden dr, apt 3d, austin, tx 78744 object", "4204 linden dr"),
    ("pred_小林的微信号是_zhou_xin7214，备注写同事", "zhou_xin7214"),
    ("小区物业张经理手机14250558214", "14250558214"),
    ("pred 我的车牌 鄂b3s46f，停 b2 层", "鄂b3s46f"),
    ("my car in Germany is K-KS 1314, parked at the Hauptbahnhof", "K-KS 1314"),
    ("my car reg is dc54 ilm for the parking", "dc54 ilm"),
    ("oma wohnt jetzt in der am park 31b, 13429 berlin object", "am park 31b, 13429 berlin"),
    ("HMRC letter asked for my NI number (HR 92 73 74 A) again", "HR 92 73 74 A"),
    ("港澳通行证【C70140537】的签注下个月到期", "C70140537"),
    ("阿姨的台湾身份证字号 K261489676，办台胞证时填过", "K261489676"),
    ("车架号 LSVUF3SBTFLKWF3FD，续保的时候要报", "LSVUF3SBTFLKWF3FD"),
    ("Parking permit registered for AL46 HTE; renew in March.", "AL46 HTE"),
    # round 6
    ("IBAN: DE34104193531866997884 BIC: NWBKGB2L", "DE34104193531866997884"),  # named, its check digits wrong
    ("Sonos in kitchen — MAC E3-02-14-8E-05-8E, reserved .187 in DHCP", "E3-02-14-8E-05-8E"),
    ("手机丢了，报警要 IMEI：863069282419564（包装盒上抄的）", "863069282419564"),
    ("oncology follow-up, MRN-FP75669046, bring the MRI CD", "FP75669046"),
    ("our car: grey Skoda, plate 7JXX-909", "7JXX-909"),
    ("she wrote her email on the form as ingrid_sorensen239@proton·com", "ingrid_sorensen239@proton·com"),
    ("ship the replacement part to 7007 W 43rd St, Apt 15B, Portland, OR 97473", "7007 W 43rd St, Apt 15B"),
    ("add me on telegram @liam_qewdh for the climbing group", "@liam_qewdh"),
    # round 7 (blind): ids by what they are called, a passport's MRZ, coordinates, 〒 addresses, a deed's number
    ("Mom's Medicare card: MBI 1AC9-W32-QG70, Part A", "1AC9-W32-QG70"),
    ("> Member ID HLT-73157943-EQ > Group 0", "HLT-73157943-EQ"),
    ("parking permit app wants my plate: CA 3DPE362, silver", "3DPE362"),
    ("社保卡卡号（不是身份证号那个）：M43418932，医保", "M43418932"),
    ("我的 QQ 小号 3359512964，游戏登录用", "3359512964"),
    ("驾驶证档案编号 567774629372，交管 12123", "567774629372"),
    ("车险保单号 PDAA202663249463845087，出险了", "PDAA202663249463845087"),
    ("licence number: PATEL475650VV900, issue 12", "PATEL475650VV900"),
    # round 8 (blind): ids by the names they go by in five countries, a booking reference, an IBAN before words,
    # a street address without its district, an e-mail typed full-width
    ("rental car form: CA driver license G8347017, exp 2029", "G8347017"),
    ("Personalausweis für die Kontoeröffnung: Ausweisnummer WRX19LZM37, gültig bis 03.2034", "WRX19LZM37"),
    ("numéro de sécurité sociale pour la mutuelle : 1 62 04 09 901 248 10", "1 62 04 09 901 248 10"),
    ("台湾同事的台胞证号码 57017468，订酒店入住要用", "57017468"),
    ("上海社保个人编号 6384019161，查缴费记录用", "6384019161"),
    ("东航订单 PNR SWQUBE，乘机人 马敏，改签要用", "SWQUBE"),
    ("Tomasz needs his PESEL (71081021806), put it in the template", "71081021806"),
    ("汇丰香港户口：679-290810-033，转数快", "679-290810-033"),
    # round 9 (blind)
    ("rijksregisternummer 72.08.23-364.29 — on the back of Lotte's eID", "72.08.23-364.29"),
    ("Walgreens Rx #5451301: refill on the 14th", "5451301"),
    ("体检报告编号 TJ202610257473，乙肝表面抗原阳性", "TJ202610257473"),
    ("the rental in Munich was HH-JO 9037, keep it for the toll bill", "HH-JO 9037"),
    ("Steam login (not the display name!): xianuxia854 — the kids share it", "xianuxia854"),
    ("HSBC online banking: customer ID 6009354599, secure key app", "6009354599"),
    ("学信网用户名 xianu3025，下学历认证报告要用", "xianu3025"),
    ("henkilötunnus 050681-104A (Aino's, for the Kela form)", "050681-104A"),
    ("codice fiscale di Marco: MPMSVD66P05D612N (for the rental contract)", "MPMSVD66P05D612N"),
    ("落户材料：结婚证字号 J330106-2017-505995，登记日期写在内页", "J330106-2017-505995"),
    ("salary goes to the PostFinance account CH84 0011 7033 0766 6193 4 since November", "CH84 0011 7033 0766 6193 4"),
    ('{"receiver":"杨娜","district":"朝阳区","detail":"文三路752号7栋2单元1304"}', "文三路752号7栋2单元1304"),
    (
        "recovery sheet: crumble scorpion jungle galaxy actress enrich cattle clarify gorilla napkin fatigue glacier",
        "crumble scorpion jungle galaxy actress enrich cattle clarify gorilla napkin fatigue glacier",  # one miscopied
    ),
    ("P<USAKOWALSKI<<DANIEL<<<<<<<<<<<<<<<<<<<<<<<\n5467192204USA6204165M3305050<<<<<<<<<<<<<<06", "5467192204USA"),
    ("home (for the drone geofence): 34.09265, -100.25383", "34.09265, -100.25383"),
    ("taxi: 〒161-1900 東京都杉並区高円寺南3-12-7 ハイツ117", "東京都杉並区高円寺南3-12-7"),
    ("房产证：沪（2021）徐字不动产权第2624361号，贷款合同", "沪（2021）徐字不动产权第2624361号"),
]
HOSTS = [
    ("billing-7f2.prod.lanmu-tech.cn is down tonight", "billing-7f2.prod.lanmu-tech.cn"),
    ("nas at nas.fritz.box ok", "nas.fritz.box"),
    ("vault.service.consul:8200", "vault.service.consul"),
    ("ssh pi@raspberrypi.tail1234.ts.net", "raspberrypi.tail1234.ts.net"),
    ("wiki at https://wiki.corp.example.com/x", "wiki.corp.example.com"),
    ("http://10.0.0.5:8080/", "10.0.0.5:8080"),
    ("tailscale 100.101.102.103", "100.101.102.103"),
    # an intranet page's whole URL; a cloud's private endpoint
    (
        "runbook at <https://wiki.lumen75.internal/display/ENG/On-call+runbook>, VPN",
        "wiki.lumen75.internal/display/ENG/On-call+runbook",
    ),
    (
        "上传走内网：logs-40508v.oss-cn-hangzhou-internal.aliyuncs.com，不收流量费",
        "logs-40508v.oss-cn-hangzhou-internal.aliyuncs.com",
    ),
    ("新同事记一下：发布平台在 git-yh5v.byted.org，要先连公司 VPN", "git-yh5v.byted.org"),
    ("家里 NAS 外网访问：https://ayokos48.synology.me:5001（DDNS）", "ayokos48.synology.me"),  # a home's dynamic name
]
PROVIDERS = [
    ("mailchimp: 3f9a0c2e8b7d41f6a5c9e0d2b4f81a7c-us21 (newsletter)", "3f9a0c2e8b7d41f6a5c9e0d2b4f81a7c-us21"),
    ("gitlab deploy gldt-ABCDEFGHIJKLMNOPQRST12 in CI", "gldt-ABCDEFGHIJKLMNOPQRST12"),
    ("sk-proj-abcdefghijklmnop1234 for the bot", "sk-proj-abcdefghijklmnop1234"),
    ("databricks dapi0123456789abcdef0123456789abcdef", "dapi0123456789abcdef0123456789abcdef"),
]
# ordinary technical text: every class leaves it alone (the eight an earlier blind set found redacted first)
ORDINARY = [
    "the exit code was 137 and the code was refactored; HTTP status code was 503 twice",
    # round 12's kinds of ordinary text, in our own words: references a shell, a template or JSONPath fills in, a
    # template's named blanks, a password said to be somewhere, a format, a documented default login on this machine,
    # a documented MAC address, a variable's name as a blank, an algorithm's name, a rate
    "DB_PASSWORD=${DB_PASSWORD:?set it in .env}",
    "app.mail.password=${MAIL_PASSWORD}",
    "mysql://<user>:<password>@<host>:3306/<db>",
    "The NAS password is kept in Bitwarden under 'Home / Storage'.",
    "the guest wifi password is on the fridge",
    "取件码一般是「柜号-格口号」的格式",
    "https://example.com/callback?code=AUTH_CODE&state=abc",
    "kubectl get secret app -o jsonpath='{.data.token}' | base64 -d",
    "amqp://guest:guest@127.0.0.1:5672/ works only from this machine",
    "MAC 地址写成 00:1A:2B:3C:4D:5E 这样",
    "otpauth://totp/ACME:me?secret=BASE32SECRET&issuer=ACME is the format",
    "token_endpoint_auth_method: client_secret_post",
    "password hashing: bcrypt (cost 12)",
    "门诊统筹额度今年还剩 1500 左右",
    "核酸检测阳性率见周报",
    "passwd: files systemd",  # (nsswitch.conf: where account names are looked up)
    "ssh login.hpc.univ-example.edu",
    "npm login --registry https://npm.example.com",
    "login with python311 installed",
    "docker run -u 1000 -p 8080:80 nginx",
    '<string name="token_hint">Enter your token</string>',
    "see https://example.com/s/pricing",
    "upgrade to ubuntu2204 before the login",
    "ISBN 978-0-13-110362-7, order 1234-5678-9012-3456",
    "目录：src/main.py",
    "doi:10.1038/s41586-021-03819-2",
    "pkg:pypi/requests@2.32.3",
    "ORCID 0000-0002-1825-0097 (ORCID's own example iD)",
    "ordinary101m: SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU",
    "see github.com/org/repo/releases and https://arxiv.org/abs/2310.06825v2",
    "他的电脑是 thinkpad x1",
    "| name | version |\n|--|--|\n| chroma | 2025777543 |",
    "确诊病例统计脚本 v2",
    "Chroma: embeddings (diagnosed slow queries)",
    "招商银行客服电话 95555",
    "中国银行 2024 年报：营收 6,229,876 百万元",
    "文档里写的是 2.3 版本",
    "config.yaml 是配置文件，不是密码",
    "see https://docs.alipay.com/open/api",
    "chmod 600 /etc/rsyncd.secrets and restart",
    "The steps are below.\n\nRestart the service.\n\nsystemctl restart chroma",
    "「README.md」是项目的说明",
    "| release | date |\n|---|---|\n| v2 | 2016-04-13 |",
    "commit 3f2a9c81b7d04e55aa12bc9e",
    "The password is 12+ characters",
    "The PIN is 4-6 digits",
    "CI summary: pass: 118",
    "conda pin: python=3.11",
    "secret: optional",
    '{"commit": "9fceb02d0ae598e95dc970b74767f19372d61af8"}',
    "sha512-Lw7pVqJgxN4Aq0xhv5XKvPbOQGm3Ln5w2m2Qm3Xy6d3ZpQzv0m1KXyqF1y7m2J5f6T8l2w3e4r5t6y7u8i9o0pA==",
    "git clone git@github.com:psf/requests.git",
    "password: ${DB_PASSWORD}",
    "md5sum: d41d8cd98f00b204e9800998ecf8427e  empty.txt",
    "RFC 1918 private ranges: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16",
    "https://github.com/psf/requests/blob/main/README.md",
    "edit config.yaml and README.md, then memwiki.site.plugin reloads",
    "/usr/local/lib/python3.11/site-packages/getElementsByTagName",
    "request id 123e4567-e89b-12d3-a456-426614174000 at 2026-12-02T18:18:05Z",
    "mkdocs serve -a 127.0.0.1:8000",
    "docker login ghcr.io -u octocat --password-stdin < token.txt",
    "Use `secrets.token_urlsafe(32)` to generate session keys",
    "密码管理器用的是 Bitwarden",
    "port 8080 and pid 123456789, version 3.11.7, exit code 137",
    "kube-system-coredns-7db6d8ff4d-x2v9k restarted",
    "secrets.token_hex(16) and os.environ['API_KEY']",
    "Is it safe to run migration 0042?",
    "Port 8080 is locked down; thread-safe since 2024",
    "The door code changes every 90 days",
    "the password manager is 1Password",
    "HTTP 200 at 12:30:45:00:12",
    "src / dist and CI / CD, read / write",
    "今天下午去公司开会讨论项目进度和预算问题",
    "WeChat group for the team",
    "the plate is hot",
    "Version 3, 12345 Results",
    "take 3 steps up the hill to the park",
    "| step | time |\n| --- | --- |\n| build | 12 s |",
    "postgresqlconnectionstring123 and pythonscriptsforbackups2024v2",
    "pass the salt please",
    "see the CI-CD 2024 notes; log in with (readme.md) first; the password manager (1Password) is fine",
    "release-2024-05-01-build-17-final and internationalization2024and2025",
    "pin 1 of the header goes to 3v3",
    "see https://docs.python.org/3/library/re.html and api.github.com",
    "一二三四五六七八九十个人都来了",
    # round 6's own, and words near the new rules
    "MAC address format: aa:bb:cc:dd:ee:ff",
    "hermes session 20261130_030058_12a316",  # a time stamp, not a phone number
    "log in with GitHub at https://github.com/login and then run v2.3.1-beta",
    "password manager docs: https://bitwarden.com/help/",
    "seed phrase backup: see the steel plate in the safe",
    "what is the password policy? at least 12 chars",
    "safe to run on port 8080",
    "AUTH failed for user",
    "Download the VPN client from www.openvpn.net",
    "see https://docs.python.org/3/library/re.html?highlight=search",
    # round 7 (blind): placeholders, code that reads the value, a public key, a JWT header, numbered standards
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "password = getpass.getpass()",
    "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
    "数据库连接串格式：mysql://用户名:密码@主机:3306/库名",
    "GB 11643-1999 规定了公民身份号码的结构",
    "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    "The JWT header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 only says alg HS256",
    "镜像地址 https://mirrors.aliyun.com/pypi/simple/",
    "fingerprint 3AA5 C343 7141 7D30 2F7E 4F4D 9B1C 2E3F 0C12 ABCD",
    "Secret 用 sops + age 加密，age 私钥在 1Password 条目「age-key-prod」。",
    # round 8 (blind): what documentation prints as an example, role accounts, a router's default address
    "support@python.org",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@example.com",
    "AWS docs use AKIAIOSFODNN7EXAMPLE as the sample access key id",
    "IBAN 格式示例：DE89 3704 0044 0532 0130 00（维基百科上的示例）",
    "Stripe's test card 4242 4242 4242 4242 works with any CVC",
    "E.164 example from the docs: +1 202 555 0143",
    "192.168.1.1 是大多数路由器的默认管理地址",
    "the hotel golf course is one mile from the station",
    "gym myth four days",
    "555-0100 to 555-0199 are reserved for fiction",
    "log in with your username and the password from the welcome mail",
    "Python-3.11.4 and node@20.1.0 both need a login shell",
    "the login page moved to v2.0-beta, see docs",
    "see concepts/object-c308-vpn-%E5%8F%A3%E4%BB%A4-x.html#backlinks and m-c296-VPN about the VPN password",
    # counting read out is no code; a public advisory's id, an option's value, a documentation IP range
    "password policy: one, two, three, four steps",
    "密码 一共 三 个 部分, 1 2 3 4 步",
    "GHSA-jfh8-c2jp-5v3q and CVE-2024-3094 are fixed in 5.6.2",
    "OPNsense API key and secret are sent as HTTP basic auth",
    "文档示例地址用 192.0.2.0/24，不要用真实 IP",
    "mysql -u root -P 3306 -h db.example",
    "the CVV is 3 digits, the PIN 4-6 digits",
    "docs https://example.com/docs/getting-started password reset guide",
    "保单条款第 12 条",
    # words of one length in a row are no key in groups (the 10k bench's generated text)
    "Project server index agent concept 2716 wiki fact fact rule wiki preference",
    "Agent embedding 4563 page wiki rule fact fact missing",
]


# read through the detectors' other views of a text (memwiki.site.gate.detect.detectors._views)
VIEWED = [
    (
        "给外婆挂号用的身份证号，四二零一一一一九五一一一二三六零八叉，最后一位是叉",
        "四二零一一一一九五一一一二三六零八叉",
    ),
    ("the door password is seven, capital K, percent, m, ampersand, two, q, and that's all", "capital K, percent, m"),
    # a password read out letter by letter, a lone letter among them (round 12)
    (
        "[voice memo] the garage wifi password is four, capital T, x, hash, nine, capital Q, b, seven, and done",
        "capital T, x, hash, nine",
    ),
    ("密 码 是 stfc67pg9g 哈 别 弄 错 了", "stfc67pg9g"),  # a space after each character
    # a value read out: digits, Chinese numerals, signs and letters said by name (all of it withheld)
    ("妈妈说取款密码：五 七 九 三 八 三", "九 三 八"),
    ("语音备忘：菜鸟打单的密码，六 井号 九 0 六 点 大写D 二 四 九，对，就这个", "大写D 二 四"),
    ("语音备忘：菜鸟打单的密码，小写o 小写n 井号 小写k 小写q 一 大写D，对", "井号 小写k"),
    ("银行卡一位一位念：6 2 2 2 0 2 9 1 6 1 4 6 1 0 0 3 3 0 4", "1 4 6 1"),
    ("(voice note) the wifi password is dot, zero, six, dot, lowercase d, two, four, nine, four got it?", "two, four"),
    ("密码是 三三九零七五 ，我用中文写的防偷看", "三三九零七五"),
    ("新邮箱：linyong_1003＠163．com（手机上打的全角）", "linyong_1003"),  # typed full-width
]


@pytest.mark.parametrize(("text", "secret"), VIEWED)
def test_a_text_typed_another_way_is_read_as_it_means(text: str, secret: str) -> None:
    assert secret not in redacted(text)


@pytest.mark.parametrize(("text", "secret"), CONTEXT)
def test_context_finds_the_whole_value(text: str, secret: str) -> None:
    assert any(secret in f for f in found(ContextDetector(), text)), found(ContextDetector(), text)
    assert secret not in redacted(text)


@pytest.mark.parametrize(("text", "secret"), SHAPES)
def test_shapes_find_made_tokens_and_key_blocks(text: str, secret: str) -> None:
    assert any(secret in f for f in found(ShapeDetector(), text)), found(ShapeDetector(), text)


@pytest.mark.parametrize(("text", "secret"), PERSONAL)
def test_personal_data_is_found(text: str, secret: str) -> None:
    assert any(secret in f for f in found(PersonalDetector(), text)), found(PersonalDetector(), text)


@pytest.mark.parametrize(("text", "secret"), HOSTS)
def test_internal_hosts_and_private_addresses_are_found(text: str, secret: str) -> None:
    assert any(secret in f for f in found(HostDetector(), text)), found(HostDetector(), text)


@pytest.mark.parametrize("number", ["一八八八二八八四零四二", "幺五八四七二五幺六零五"])
def test_a_number_dictated_in_chinese_numerals_is_read_as_digits(number: str) -> None:
    assert number not in redacted(f"语音备忘 帮我记下快递小哥电话{number}明天下午送")


@pytest.mark.parametrize(("text", "secret"), PROVIDERS)
def test_provider_rules_read_a_token_to_its_end(text: str, secret: str) -> None:
    assert secret not in redacted(text)
    assert any(secret in f for f in found(ProviderDetector(), text)) or secret in found(ShapeDetector(), text)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Detectors().find(text) == [], found(Detectors(), text)


def test_a_token_cut_by_a_line_break_is_withheld_to_its_end() -> None:
    """A provider's rule finds the first line; the detectors carry the span over the line its alphabet goes on in
    (or, in a one-line field where the break became a space, over the next run of 12 or more)."""
    text = "密钥（复制时换行了）：\n```\nsk-8b882d903d5ef6cf7f1\n32deb052e41b9\n```\nnext line here"
    assert redacted(text) == "密钥（复制时换行了）：\n```\n[R]\n```\nnext line here"
    assert redacted("sk-20bdc16dae32c11f d772b682e5cdd187 拼起来用") == "[R] 拼起来用"
    assert redacted("see sk-proj-abcdefghijk1234567 for the bot") == "see [R] for the bot"


def test_a_token_wrapped_over_two_lines_is_withheld_from_its_head() -> None:
    """The second line is the part a detector finds; the head on the line before goes with it: any run of two kinds
    of character across a line break, a head with a provider's prefix across a one-line field's space. An ordinary
    word before a token stays."""
    head, tail = "glsa_ZfiptxroqpQ4ymly", "jRwzWaQv3hVDVRr8_a32359e0"
    assert redacted(f"from the pager SMS (it wrapped): {head}\n{tail} for the status page") == (
        "from the pager SMS (it wrapped): [R] for the status page"
    )
    assert redacted(f"from the pager SMS (it wrapped): {head} {tail} for the status page") == (
        "from the pager SMS (it wrapped): [R] for the status page"
    )
    assert redacted("SecretKey nlWTWkNAwLJEWKxy\nvfdXGzEs7WRPU8Qo 记得轮换") == "SecretKey [R] 记得轮换"
    assert redacted("the nightly backup_configuration\nsk-proj-abcdefghijk1234567 x").startswith("the nightly backup_")
    assert redacted("rotate deploy_helper_tool sk-proj-abcdefghijk1234567 x") == "rotate deploy_helper_tool [R] x"


def test_a_lower_cased_copy_of_a_token_is_still_a_token() -> None:
    token = "YzLaW2gr9D8Uz1zsh782WQWqC6tYOoTZINW2fDAk"
    assert made(token) and made(token.lower())
    assert not made("c828relates_toThing") and not made("MyServiceName2024Production")


@pytest.mark.parametrize(
    ("predicate", "secret"),
    [
        ("my_car_is_the_blue_one_(hh-fs_282)_parked_by_the_bakery", "hh-fs_282"),
        ("hmrc_letter_asked_for_my_ni_number_(wl_02_88_08_a)_again", "wl_02_88_08_a"),
    ],
)
def test_a_predicate_its_store_lower_cased_is_read_as_written(predicate: str, secret: str) -> None:
    assert secret not in redacted(predicate)


def test_a_label_is_never_taken_for_a_secret() -> None:
    for text in (
        'MYSQL_ROOT_PASSWORD: "[redacted: password · 3f2a9c]"',
        '{"t": "MYSQL_ROOT_PASSWORD: \\"[redacted: password \\u00b7 3f2a9c]\\""}',
        "concepts/page-c783-redacted-card-number-095866.html",
    ):
        assert Detectors().find(text) == [], found(Detectors(), text)


@pytest.mark.parametrize(
    ("output", "secret"),
    [
        ('host smtp.gmail.com\nuser notes.bot\npassword "iydb cddb ztrd ktmv"\n', "iydb cddb ztrd ktmv"),
        ('traveller:\n  name: "A. Walker"\n  passport_number: "Y29882756"  # expires 2031\n', "Y29882756"),
        ("Backup recovery codes (printed copy):\n- og62g-xommu\n- kxqoh-ctxtd\n- 0rfyc-hkw2j", "0rfyc-hkw2j"),
    ],
)
def test_a_tools_json_output_is_read_as_its_lines(output: str, secret: str) -> None:
    """A hermes tool message holds its output JSON-encoded: `\\n` and `\\"` are read as the line breaks and quotes
    they stand for."""
    import json

    assert secret not in redacted(json.dumps({"output": output, "code": 0}))


def test_a_keys_bytes_and_a_paseto_token_are_withheld() -> None:
    key = "[" + ",".join(str((i * 37 + 11) % 256) for i in range(64)) + "]"
    assert key not in redacted(f"~/.config/solana/id.json: {key}")  # (a list in brackets, yet no placeholder)
    paseto = "v4.local.uxxYK2Mk-2YV2IJfD326CqOxFMP6y3P5zF0oGC42UW2Rg-7XEI"
    assert "uxxYK2Mk" not in redacted(f"the session cookie decodes to nothing readable: {paseto}")
    joined = 'const key = "fdaa970d10128d2a0b1c2d3e4f5a6b7c" + "0c4f143ce10687d-us15";'
    assert "0c4f143ce10687d" not in redacted(joined)  # a string concatenation is one string


def test_a_long_texts_views_read_its_changed_lines_and_the_line_after() -> None:
    """A view of a page of many lines reads again only the lines it changes and the line after each (a value
    under its label): `door_code_is:` is read as words, and the code on the next line is withheld."""
    filler = [f"line {i} of the runbook" for i in range(30)]
    page = "\n".join([*filler[:20], "door_code_is:", "4821", "see you", *filler[20:]])
    shown = Detectors().redact(page, lambda kind, secret: "[R]")[0].split("\n")
    assert shown[20:23] == ["door_code_is:", "[R]", "see you"]
    assert shown[:20] + shown[23:] == filler
    at = page.index("door_code_is:")
    assert _views(page) == [(at, "door code is:\n4821"), (at, "DOOR CODE IS:\n4821")]  # (the rest is read once)
    spaced = "\n".join([*filler[:10], "password_is:", "", "", "Tr0ub_4dor&3x", *filler[10:20]])
    assert "Tr0ub" not in Detectors().redact(spaced, lambda kind, secret: "[R]")[0]  # (blank lines between)
    one_line = Detectors().redact("the door_code_4821 works", lambda kind, secret: "[R]")[0]
    assert "4821" not in one_line


def test_a_keys_id_joined_to_its_secret_by_a_colon_is_withheld_with_it() -> None:
    """An FCM server key is `<id>:<secret>`: a rule that finds the secret takes the id before the colon too (a word
    before a colon, `token:`, is no part of a key)."""
    key = "AAAAkdsxpxm:APA91bHPRgkFHkk3eJxo9vQ0y8Lq-Zq3Vd0pXfR3Oa1EoGJx9Z0kYb6mJc8aDqEoWZp5tS8bCq"
    text = f"xiao zhou: {key} me: thx"
    assert [text[s.start : s.end] for s in Detectors().find(text)] == [key]
    text = "token:ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert [text[s.start : s.end] for s in Detectors().find(text)] == [text[6:]]


def test_a_quoted_password_is_found_after_a_space_or_a_corner_bracket_not_after_a_letter() -> None:
    """The quote-first pattern reads as the old one: a quote opening after a letter is an apostrophe (`it's`), a
    Chinese corner bracket opens a quote after any character."""

    def passwords(text: str) -> list[str]:
        return [text[s.start : s.end] for s in ShapeDetector().find(text) if s.kind == "password"]

    assert passwords("the key is '8ECa(#!LRGfHp' now") == ["8ECa(#!LRGfHp"]
    assert passwords("密码「8ECa(#!LRGfHp」") == ["8ECa(#!LRGfHp"]
    assert passwords("it's8ECa(#!LRGfHp' now") == []


def test_every_detector_pattern_compiles() -> None:
    """The detectors' patterns compile where first used (memwiki.text.screen.LazyPattern): each one compiles here, so a
    wrong one fails this test rather than the first build that meets it; a detector made again makes none anew."""
    from memwiki.text.screen import LAZY

    Detectors()
    made = len(LAZY)
    Detectors()
    assert len(LAZY) == made > 300
    for pattern in LAZY:
        assert pattern.compiled().pattern == pattern.pattern
    text = "the door code is 4821, password: Tr0ub4dor&3x, mail lin.xiao@mailbox.org"
    assert [s.kind for s in Detectors().find(text)] == ["code", "password", "email"]
