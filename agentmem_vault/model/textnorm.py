"""Text folding and tokens for matching Chinese (Traditional or Simplified) and English text.

``fold`` = NFKC + case-fold + Traditional->Simplified (character level) + collapsed whitespace, so
``註冊 Memory`` and ``注册 memory`` compare equal. ``tokenize`` gives Latin word tokens (stopwords
dropped) and CJK character bigrams (plus single characters for one-character runs).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Pairs the hanziconv table lacks or maps differently from everyday Taiwan/HK usage.
_EXTRA_T2S = {
    "註": "注",
    "冊": "册",
    "於": "于",
    "準": "准",
    "嘗": "尝",
    "擡": "抬",
    "捨": "舍",
    "週": "周",
    "裏": "里",
    "祕": "秘",
    "鍾": "钟",
    "衹": "只",
    "隻": "只",
    "麪": "面",
    "麵": "面",
    "纔": "才",
    "彙": "汇",
    "臺": "台",
    "檯": "台",
    "颱": "台",
    "複": "复",
    "覆": "复",
    "範": "范",
    "係": "系",
    "繫": "系",
    "鬆": "松",
    "鬍": "胡",
    "誌": "志",
    "餘": "余",
    "瞭": "了",
    "著": "着",
    "佔": "占",
    "僱": "雇",
    "啟": "启",
    "綫": "线",
    "線": "线",
    "為": "为",
    "這": "这",
    "個": "个",
    "們": "们",
    "裡": "里",
    "與": "与",
    "檔": "档",
    "設": "设",
    "記": "记",
    "憶": "忆",
    "態": "态",
    "錄": "录",
    "續": "续",
    "補": "补",
    "動": "动",
    "舊": "旧",
    "專": "专",
    "數": "数",
    "據": "据",
    "庫": "库",
    "開": "开",
    "關": "关",
    "應": "应",
    "該": "该",
    "話": "话",
    "說": "说",
    "請": "请",
    "試": "试",
    "測": "测",
    "驗": "验",
    "證": "证",
    "錯": "错",
    "誤": "误",
    "單": "单",
    "雙": "双",
    "響": "响",
    "顯": "显",
    "處": "处",
    "實": "实",
    "現": "现",
    "時": "时",
    "間": "间",
    "問": "问",
    "題": "题",
    "決": "决",
    "議": "议",
    "書": "书",
    "讀": "读",
    "寫": "写",
    "檢": "检",
    "尋": "寻",
    "儲": "储",
    "雲": "云",
    "簡": "简",
    "體": "体",
    "轉": "转",
    "換": "换",
    "長": "长",
    "歸": "归",
    "結": "结",
    "論": "论",
    "規": "规",
    "則": "则",
    "習": "习",
    "慣": "惯",
    "預": "预",
    "選": "选",
    "項": "项",
    "採": "采",
    "併": "并",
    "佈": "布",
}

_STOPWORDS = frozenset(
    """a an and are as at be been but by can could do does for from has have how i if in into is it
    its me my no not of on or our should so that the their them then there these they this to us
    was we were what when where which who why will with would you your please""".split()
)

_WS_RE = re.compile(r"\s+")
_LATIN_RE = re.compile(r"[0-9a-z_]+(?:[.\-+#][0-9a-z_]+)*")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+")


@lru_cache(maxsize=1)
def _t2s_table() -> dict[int, str]:
    table: dict[int, str] = {}
    try:
        from hanziconv import charmap  # small data module: two aligned strings

        for t, s in zip(charmap.traditional_charmap, charmap.simplified_charmap, strict=False):
            if t != s:
                table[ord(t)] = s
    except ImportError:  # pragma: no cover - declared dependency; degrade to our own pairs
        pass
    for t, s in _EXTRA_T2S.items():
        if t != s:
            table[ord(t)] = s
    return table


def to_simplified(text: str) -> str:
    return text.translate(_t2s_table())


def fold(text: str) -> str:
    """NFKC, case-fold, Traditional->Simplified, whitespace collapsed and stripped."""
    t = unicodedata.normalize("NFKC", text or "").casefold()
    t = to_simplified(t)
    return _WS_RE.sub(" ", t).strip()


def tokenize(text: str, *, fold_first: bool = True) -> list[str]:
    """Latin words (stopwords dropped) and CJK bigrams; a lone CJK character is its own token."""
    t = fold(text) if fold_first else text
    out: list[str] = []
    for m in _LATIN_RE.finditer(t):
        w = m.group(0)
        if w not in _STOPWORDS and (len(w) > 1 or w.isdigit()):
            out.append(w)
    for m in _CJK_RE.finditer(t):
        run = m.group(0)
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


# -- Taiwan/Hong Kong vs mainland vocabulary (additive; used by recall) ------------------------------
# Character folding makes 註冊 == 注册, but some words differ, not just their characters: 欄位/字段,
# 元件/组件, 資料庫/数据库. Keys are already folded (Simplified characters); longest first.
_TERMS = {
    "资料库": "数据库",
    "资料表": "数据表",
    "资料夹": "文件夹",
    "资料": "数据",
    "栏位": "字段",
    "元件": "组件",
    "档案": "文件",
    "程式码": "代码",
    "程式": "程序",
    "预设": "默认",
    "伺服器": "服务器",
    "网路": "网络",
    "记忆体": "内存",
    "软体": "软件",
    "硬体": "硬件",
    "讯息": "消息",
    "使用者": "用户",
    "登入": "登录",
    "简讯": "短信",
    "萤幕": "屏幕",
    "视窗": "窗口",
    "专案": "项目",
    "函式": "函数",
    "物件": "对象",
    "变数": "变量",
    "执行绪": "线程",
    "快取": "缓存",
    "介面": "接口",
    "帐号": "账号",
    "帐户": "账户",
    "帐单": "账单",
    "连结": "链接",
    "演算法": "算法",
    "储存库": "仓库",
    "回呼": "回调",
    "除错": "调试",
    "套件": "包",
    "汇入": "导入",
    "汇出": "导出",
    "列印": "打印",
    "影片": "视频",
    "位址": "地址",
    "原始码": "源码",
    "工作阶段": "会话",
    "应用程式": "应用",
    "行动装置": "移动设备",
    "资讯": "信息",
    "最佳化": "优化",
    "支援": "支持",
    "相依": "依赖",
    "逾时": "超时",
    "叠代": "迭代",
}
_TERMS_RE = re.compile("|".join(sorted(map(re.escape, _TERMS), key=len, reverse=True)))


def normalize_terms(folded: str) -> str:
    """Map Taiwan/HK words to their mainland equivalents in text already passed through ``fold``."""
    return _TERMS_RE.sub(lambda m: _TERMS[m.group(0)], folded)
